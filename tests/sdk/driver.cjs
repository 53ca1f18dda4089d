#!/usr/bin/env node
// Drives the official `assemblyai` Node SDK, unchanged, against an
// `earshot emulator` (tests/sdk_compat.rs starts one per run).
//
// Environment: EARSHOT_SDK_URL (the emulator's base URL), EARSHOT_SDK_KEY
// (its API key), EARSHOT_SDK_POLL_LIMIT (its --poll-limit),
// EARSHOT_SDK_NODE_DIR (the npm prefix holding the SDK, target/sdk/node).
// Prints one line per case, then exactly `N passed, N failed`; exits 1 on
// any failure.
//
// The WAV files are made here: 8 kHz mono silence whose LIST/INFO/ICMT
// comment is the transcript the emulator returns. A loopback HTTP server
// run here serves one of them (the audio_url case) and receives the webhook.
"use strict";

const crypto = require("node:crypto");
const fs = require("node:fs");
const http = require("node:http");
const os = require("node:os");
const path = require("node:path");
const { createRequire } = require("node:module");

const nodeDir = process.env.EARSHOT_SDK_NODE_DIR;
const { AssemblyAI } = createRequire(path.join(nodeDir, "package.json"))("assemblyai");
const sdkVersion = createRequire(path.join(nodeDir, "package.json"))(
  "assemblyai/package.json",
).version;

const AUTH_HEADER = "X-Earshot-Check";
const AUTH_VALUE = `sdk-compat-${crypto.randomBytes(8).toString("hex")}`;
// The most of a webhook body the receiver reads.
const MAX_BODY = 64 * 1024;
// How long a case waits for something the emulator sends by itself.
const WAIT_MS = 20_000;

/** A PCM WAV of `seconds` of silence carrying `comment` in ICMT. */
function wav(seconds, comment) {
  const rate = 8000;
  const chunk = (tag, data) => {
    const header = Buffer.alloc(8);
    header.write(tag, 0, "ascii");
    header.writeUInt32LE(data.length, 4);
    const pad = data.length % 2 ? Buffer.alloc(1) : Buffer.alloc(0);
    return Buffer.concat([header, data, pad]);
  };
  const fmt = Buffer.alloc(16);
  fmt.writeUInt16LE(1, 0);
  fmt.writeUInt16LE(1, 2);
  fmt.writeUInt32LE(rate, 4);
  fmt.writeUInt32LE(rate * 2, 8);
  fmt.writeUInt16LE(2, 12);
  fmt.writeUInt16LE(16, 14);
  const text = Buffer.concat([Buffer.from(comment), Buffer.alloc(1)]);
  const body = Buffer.concat([
    chunk("fmt ", fmt),
    chunk("LIST", Buffer.concat([Buffer.from("INFO"), chunk("ICMT", text)])),
    chunk("data", Buffer.alloc(2 * Math.floor(rate * seconds))),
  ]);
  const riff = Buffer.alloc(12);
  riff.write("RIFF", 0, "ascii");
  riff.writeUInt32LE(4 + body.length, 4);
  riff.write("WAVE", 8, "ascii");
  return Buffer.concat([riff, body]);
}

/** Serves GET /audio.wav and records every POST (url, headers, body). */
async function startReceiver(audio) {
  const posts = [];
  const waiters = [];
  const server = http.createServer((request, response) => {
    if (request.method === "GET" && request.url === "/audio.wav") {
      response.writeHead(200, { "Content-Type": "audio/wav", "Content-Length": audio.length });
      response.end(audio);
      return;
    }
    if (request.method !== "POST") {
      response.writeHead(404).end();
      return;
    }
    const chunks = [];
    let size = 0;
    request.on("data", (chunk) => {
      if (size < MAX_BODY) chunks.push(chunk);
      size += chunk.length;
    });
    request.on("end", () => {
      posts.push({ url: request.url, headers: request.headers, body: Buffer.concat(chunks) });
      response.writeHead(200, { "Content-Length": 2 }).end("ok");
      waiters.splice(0).forEach((wake) => wake());
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${server.address().port}`;
  const waitPost = async (prefix) => {
    const deadline = Date.now() + WAIT_MS;
    for (;;) {
      const found = posts.find((post) => post.url.startsWith(prefix));
      if (found) return found;
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no POST to ${prefix} within ${WAIT_MS / 1000} s`);
      await new Promise((resolve) => {
        waiters.push(resolve);
        setTimeout(resolve, Math.min(left, 500));
      });
    }
  };
  return { url, waitPost, close: () => server.close() };
}

function check(condition, message) {
  if (!condition) throw new Error(message);
}

async function main() {
  const baseUrl = process.env.EARSHOT_SDK_URL.replace(/\/+$/, "");
  const pollLimit = Number(process.env.EARSHOT_SDK_POLL_LIMIT || "60");
  console.log(`node sdk: assemblyai ${sdkVersion}, node ${process.version}`);
  const client = new AssemblyAI({ apiKey: process.env.EARSHOT_SDK_KEY, baseUrl });

  const work = fs.mkdtempSync(path.join(os.tmpdir(), "earshot-sdk-"));
  const spoken = "hello from the node sdk";
  const hello = path.join(work, "hello.wav");
  fs.writeFileSync(hello, wav(2.5, spoken));
  const served = "audio served over http";
  const receiver = await startReceiver(wav(1.0, served));
  const results = [];

  const runCase = async (name, run) => {
    try {
      const detail = await run();
      results.push(true);
      console.log(`ok   ${name}: ${detail}`);
    } catch (error) {
      results.push(false);
      console.log(`FAIL ${name}: ${error && error.message ? error.message : error}`);
    }
  };

  await runCase("upload and transcribe a local WAV", async () => {
    const uploadUrl = await client.files.upload(hello);
    check(uploadUrl.startsWith(baseUrl), `upload_url ${uploadUrl}`);
    const transcript = await client.transcripts.transcribe({ audio: hello });
    check(transcript.status === "completed", `status ${transcript.status}: ${transcript.error}`);
    check(transcript.text === spoken, `text ${JSON.stringify(transcript.text)}`);
    check(Number.isInteger(transcript.audio_duration) && transcript.audio_duration === 3,
      `audio_duration ${transcript.audio_duration}`);
    const words = transcript.words.map((word) => word.text);
    check(words.join(" ") === spoken, `words ${JSON.stringify(words)}`);
    check(transcript.words.at(-1).end === 2500, `last word ends at ${transcript.words.at(-1).end}`);
    return `transcribe({audio: path}) completed, text ${JSON.stringify(transcript.text)}, audio_duration ${transcript.audio_duration}`;
  });

  await runCase("transcribe an audio_url", async () => {
    const url = `${receiver.url}/audio.wav`;
    const transcript = await client.transcripts.transcribe({ audio: url });
    check(transcript.status === "completed", `status ${transcript.status}: ${transcript.error}`);
    check(transcript.text === served, `text ${JSON.stringify(transcript.text)}`);
    check(transcript.audio_url === url, `audio_url ${transcript.audio_url}`);
    return `transcribe({audio: url}) completed, text ${JSON.stringify(transcript.text)}`;
  });

  await runCase("submit with webhook_url and an auth header", async () => {
    const submitted = await client.transcripts.submit({
      audio: hello,
      webhook_url: `${receiver.url}/hook?case=node`,
      webhook_auth_header_name: AUTH_HEADER,
      webhook_auth_header_value: AUTH_VALUE,
    });
    const post = await receiver.waitPost("/hook");
    check(post.url === "/hook?case=node", `webhook path ${post.url}`);
    check(post.headers[AUTH_HEADER.toLowerCase()] === AUTH_VALUE, "auth header missing or wrong");
    const payload = JSON.parse(post.body.toString());
    check(payload.transcript_id === submitted.id && payload.status === "completed",
      `payload ${JSON.stringify(payload)}`);
    const done = await client.transcripts.waitUntilReady(submitted.id);
    check(done.webhook_auth === true, `webhook_auth ${done.webhook_auth}`);
    return `submit(webhook) delivered {transcript_id, status} with ${AUTH_HEADER}`;
  });

  await runCase("an unreadable file ends in status error", async () => {
    const notes = path.join(work, "notes.txt");
    fs.writeFileSync(notes, "these bytes are not audio\n");
    const transcript = await client.transcripts.transcribe({ audio: notes });
    check(transcript.status === "error", `status ${transcript.status}`);
    check(transcript.error && transcript.error.includes("audio"), `error ${transcript.error}`);
    return `status error: ${JSON.stringify(transcript.error)}`;
  });

  await runCase("20 transcribe calls at once", async () => {
    const files = [];
    for (let index = 0; index < 20; index += 1) {
      const file = path.join(work, `group-${index}.wav`);
      fs.writeFileSync(file, wav(1.0 + index / 10, `group file ${index}`));
      files.push(file);
    }
    const transcripts = await Promise.all(
      files.map((file) => client.transcripts.transcribe({ audio: file })),
    );
    const statuses = transcripts.map((t) => t.status);
    check(statuses.every((status) => status === "completed"), `statuses ${statuses}`);
    const texts = transcripts.map((t) => t.text).sort();
    const expected = files.map((_, index) => `group file ${index}`).sort();
    check(JSON.stringify(texts) === JSON.stringify(expected), `texts ${texts}`);
    return "Promise.all of 20 transcribe calls: 20 of 20 completed";
  });

  await runCase("an unknown id is a readable 404", async () => {
    try {
      await client.transcripts.get("no-such-transcript");
    } catch (error) {
      check(error.message.includes("no transcript with id"), `message ${error.message}`);
      check(!error.message.includes("{"), `raw body in ${error.message}`);
      return `Error: ${error.message}`;
    }
    throw new Error("no error for an unknown id");
  });

  await runCase("polling too often is a 429 with its wait", async () => {
    const submitted = await client.transcripts.submit({ audio: hello });
    for (let attempt = 0; attempt < pollLimit + 2; attempt += 1) {
      try {
        await client.transcripts.get(submitted.id);
      } catch (error) {
        const wait = /retry after (\d+) s/.exec(error.message);
        check(wait && Number(wait[1]) >= 1 && Number(wait[1]) <= 60, `no wait in ${error.message}`);
        return `Error after ${attempt} GETs: ${error.message}`;
      }
    }
    throw new Error(`no 429 after ${pollLimit + 2} GETs`);
  });

  receiver.close();
  fs.rmSync(work, { recursive: true, force: true });
  const passed = results.filter(Boolean).length;
  const failed = results.length - passed;
  console.log(`${passed} passed, ${failed} failed`);
  return failed ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (error) => {
    console.log(`FAIL driver: ${error && error.stack ? error.stack : error}`);
    console.log("0 passed, 1 failed");
    process.exit(1);
  },
);
