#!/usr/bin/env python3
"""Drives the official `assemblyai` Python SDK, unchanged, against an
`earshot emulator` (tests/sdk_compat.rs starts one per run).

Environment: EARSHOT_SDK_URL (the emulator's base URL), EARSHOT_SDK_KEY
(its API key), EARSHOT_SDK_POLL_LIMIT (its --poll-limit). Prints one line
per case, then exactly `N passed, N failed`; exits 1 on any failure.

The WAV files are made here: 8 kHz mono silence whose `LIST/INFO/ICMT`
comment is the transcript the emulator returns. A loopback HTTP server run
here serves one of them (the `audio_url` case) and receives the webhook.
"""

import json
import os
import re
import secrets
import struct
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import assemblyai as aai

AUTH_HEADER = "X-Earshot-Check"
AUTH_VALUE = "sdk-compat-" + secrets.token_hex(8)
# The most of a webhook body the receiver reads.
MAX_BODY = 64 * 1024
# How long a case waits for something the emulator sends by itself.
WAIT_SECONDS = 20


def wav(seconds, comment):
    """A PCM WAV of `seconds` of silence carrying `comment` in ICMT."""
    rate = 8000

    def chunk(tag, data):
        padded = data + (b"\0" if len(data) % 2 else b"")
        return tag + struct.pack("<I", len(data)) + padded

    body = chunk(b"fmt ", struct.pack("<HHIIHH", 1, 1, rate, rate * 2, 2, 16))
    body += chunk(b"LIST", b"INFO" + chunk(b"ICMT", comment.encode() + b"\0"))
    body += chunk(b"data", b"\0\0" * int(rate * seconds))
    return b"RIFF" + struct.pack("<I", 4 + len(body)) + b"WAVE" + body


class Receiver:
    """Serves GET /audio.wav and records every POST (path, headers with
    lower-case names, body)."""

    def __init__(self, audio):
        self.audio = audio
        self.posts = []
        self.arrived = threading.Condition()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                if self.path != "/audio.wav":
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "audio/wav")
                self.send_header("Content-Length", str(len(receiver.audio)))
                self.end_headers()
                self.wfile.write(receiver.audio)

            def do_POST(self):
                length = min(int(self.headers.get("Content-Length") or 0), MAX_BODY)
                body = self.rfile.read(length)
                with receiver.arrived:
                    headers = {name.lower(): value for name, value in self.headers.items()}
                    receiver.posts.append((self.path, headers, body))
                    receiver.arrived.notify_all()
                self.send_response(200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def wait_post(self, path_prefix):
        """The first POST whose path starts with `path_prefix`."""
        deadline = time.monotonic() + WAIT_SECONDS
        with self.arrived:
            while True:
                for post in self.posts:
                    if post[0].startswith(path_prefix):
                        return post
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError("no POST to %s within %d s" % (path_prefix, WAIT_SECONDS))
                self.arrived.wait(left)


def check(condition, message):
    if not condition:
        raise AssertionError(message)


def main():
    base_url = os.environ["EARSHOT_SDK_URL"].rstrip("/")
    aai.settings.base_url = base_url
    aai.settings.api_key = os.environ["EARSHOT_SDK_KEY"]
    poll_limit = int(os.environ.get("EARSHOT_SDK_POLL_LIMIT", "60"))
    from assemblyai import types as aai_types

    pydantic_major = 2 if aai_types.pydantic_v2 else 1
    print("python sdk: assemblyai %s, pydantic v%d models" % (aai.__version__, pydantic_major))

    work = tempfile.TemporaryDirectory(prefix="earshot-sdk-")
    spoken = "hello from the python sdk"
    hello = os.path.join(work.name, "hello.wav")
    with open(hello, "wb") as file:
        file.write(wav(2.5, spoken))
    served = "audio served over http"
    receiver = Receiver(wav(1.0, served))
    transcriber = aai.Transcriber()
    results = []

    def case(name, run):
        try:
            detail = run()
            results.append(True)
            print("ok   %s: %s" % (name, detail))
        except Exception as error:  # a failed case is reported, not raised
            results.append(False)
            print("FAIL %s: %s: %s" % (name, type(error).__name__, error))
        sys.stdout.flush()

    def upload_and_transcribe_a_file():
        upload_url = transcriber.upload_file(hello)
        check(upload_url.startswith(base_url), "upload_url %r" % upload_url)
        transcript = transcriber.transcribe(hello)
        check(transcript.status == aai.TranscriptStatus.completed, "status %s: %s" % (transcript.status, transcript.error))
        check(transcript.text == spoken, "text %r" % transcript.text)
        duration = transcript.json_response["audio_duration"]
        check(type(duration) is int and duration == 3, "audio_duration %r" % duration)
        words = [word.text for word in transcript.words]
        check(words == spoken.split(), "words %r" % words)
        check(transcript.words[-1].end == 2500, "last word ends at %r" % transcript.words[-1].end)
        return "transcribe(path) completed, text %r, audio_duration %d" % (transcript.text, duration)

    def transcribe_an_audio_url():
        url = receiver.url + "/audio.wav"
        transcript = transcriber.transcribe(url)
        check(transcript.status == aai.TranscriptStatus.completed, "status %s: %s" % (transcript.status, transcript.error))
        check(transcript.text == served, "text %r" % transcript.text)
        check(transcript.audio_url == url, "audio_url %r" % transcript.audio_url)
        return "transcribe(url) completed, text %r" % transcript.text

    def webhook_with_an_auth_header():
        config = aai.TranscriptionConfig().set_webhook(
            receiver.url + "/hook?case=python", AUTH_HEADER, AUTH_VALUE
        )
        transcript = transcriber.submit(hello, config=config)
        path, headers, body = receiver.wait_post("/hook")
        check(path == "/hook?case=python", "webhook path %r" % path)
        check(headers.get(AUTH_HEADER.lower()) == AUTH_VALUE, "auth header missing or wrong")
        payload = json.loads(body)
        check(payload == {"transcript_id": transcript.id, "status": "completed"}, "payload %r" % payload)
        transcript.wait_for_completion()
        check(transcript.json_response["webhook_auth"] is True, "webhook_auth %r" % transcript.json_response["webhook_auth"])
        return "submit(webhook) delivered {transcript_id, status} with %s" % AUTH_HEADER

    def an_unreadable_file_ends_in_error():
        notes = os.path.join(work.name, "notes.txt")
        with open(notes, "wb") as file:
            file.write(b"these bytes are not audio\n")
        transcript = transcriber.transcribe(notes)
        check(transcript.status == aai.TranscriptStatus.error, "status %s" % transcript.status)
        check(transcript.error and "audio" in transcript.error, "error %r" % transcript.error)
        return "status error: %r" % transcript.error

    def transcribe_a_group_of_20():
        paths = []
        for index in range(20):
            path = os.path.join(work.name, "group-%02d.wav" % index)
            with open(path, "wb") as file:
                file.write(wav(1.0 + index / 10, "group file %d" % index))
            paths.append(path)
        group = transcriber.transcribe_group(paths)
        transcripts = group.transcripts
        check(len(transcripts) == 20, "%d transcripts" % len(transcripts))
        statuses = [t.status for t in transcripts]
        check(all(s == aai.TranscriptStatus.completed for s in statuses), "statuses %r" % statuses)
        texts = sorted(t.text for t in transcripts)
        check(texts == sorted("group file %d" % i for i in range(20)), "texts %r" % texts)
        check(group.status == aai.TranscriptStatus.completed, "group status %s" % group.status)
        return "transcribe_group: 20 of 20 completed"

    def an_unknown_id_is_a_readable_404():
        try:
            aai.Transcript.get_by_id("no-such-transcript")
        except aai.TranscriptError as error:
            message = str(error)
            check(error.status_code == 404, "status_code %r" % error.status_code)
            check("no transcript with id" in message, "message %r" % message)
            check("Reason:" not in message and "{" not in message, "raw body in %r" % message)
            return "TranscriptError 404: %s" % message
        raise AssertionError("no error for an unknown id")

    def polling_too_often_is_a_429_with_its_wait():
        transcript = transcriber.submit(hello)
        for _ in range(poll_limit + 2):
            try:
                aai.Transcript.get_by_id(transcript.id)
            except aai.TranscriptError as error:
                message = str(error)
                check(error.status_code == 429, "status_code %r: %s" % (error.status_code, message))
                wait = re.search(r"retry after (\d+) s", message)
                check(wait and 1 <= int(wait.group(1)) <= 60, "no wait in %r" % message)
                return "TranscriptError 429 after %d GETs: %s" % (poll_limit, message)
        raise AssertionError("no 429 after %d GETs" % (poll_limit + 2))

    case("upload and transcribe a local WAV", upload_and_transcribe_a_file)
    case("transcribe an audio_url", transcribe_an_audio_url)
    case("submit with webhook_url and an auth header", webhook_with_an_auth_header)
    case("an unreadable file ends in status error", an_unreadable_file_ends_in_error)
    case("transcribe_group of 20", transcribe_a_group_of_20)
    case("an unknown id is a readable 404", an_unknown_id_is_a_readable_404)
    case("polling too often is a 429 with its wait", polling_too_often_is_a_429_with_its_wait)

    receiver.server.shutdown()
    work.cleanup()
    passed = results.count(True)
    failed = results.count(False)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
