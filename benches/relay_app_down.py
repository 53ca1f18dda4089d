#!/usr/bin/env python3
"""`python3 benches/relay_app_down.py target/release/earshot [EVENTS] [DOWN_S]`

The app down while the platform keeps delivering: an emulator (time scale
0.01) sends EVENTS (default 500) events, spread over DOWN_S (default 60)
seconds, to `earshot listen --store --forward-to` an app that is not
running; halfway the observer is killed with SIGKILL and started again;
after DOWN_S the app starts. Reports how many events the app took, how many
more than once, whether they came in the order stored, and how long the
backlog took to drain. Talks only to 127.0.0.1; everything lives in a
temporary directory.
"""

import http.server
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

SECRET = "whsec_relay_bench_secret_0123456789abcdef"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(url, body=b"{}"):
    request = urllib.request.Request(url, data=body, method="POST",
                                     headers={"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as answer:
        return json.loads(answer.read() or b"{}")


def first_lines(process, count):
    return [process.stdout.readline().decode() for _ in range(count)]


def main():
    binary = os.path.abspath(sys.argv[1])
    events = int(sys.argv[2]) if len(sys.argv) > 2 else 500
    down_s = float(sys.argv[3]) if len(sys.argv) > 3 else 60.0
    work = tempfile.mkdtemp(prefix="relay-bench-")
    secret = os.path.join(work, "secret")
    with open(secret, "w") as f:
        f.write(SECRET)
    env = {k: v for k, v in os.environ.items() if not k.startswith("EARSHOT_")}
    env["EARSHOT_CONFIG"] = "/nonexistent/earshot-bench.toml"

    emu_port, listen_port, app_port = free_port(), free_port(), free_port()
    emulator = subprocess.Popen(
        [binary, "emulator", "--listen", f"127.0.0.1:{emu_port}", "--allow-private-urls",
         "--time-scale", "0.01"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    lines = first_lines(emulator, 2)
    key = lines[1].split()[-1]
    base = f"http://127.0.0.1:{emu_port}"

    listen_args = [binary, "listen", "--listen", f"127.0.0.1:{listen_port}", "--secret-file",
                   secret, "--store", os.path.join(work, "store.db"), "--forward-to",
                   f"http://127.0.0.1:{app_port}/hooks"]

    def start_observer():
        observer = subprocess.Popen(listen_args, stdout=subprocess.PIPE,
                                    stderr=subprocess.DEVNULL, env=env)
        first_lines(observer, 1)  # "listening on ..."
        threading.Thread(target=lambda: observer.stdout.read(), daemon=True).start()
        return observer

    observer = start_observer()
    subprocess.run(
        [binary, "subs", "create", f"http://127.0.0.1:{listen_port}/hooks", "--event",
         "session.started", "--event", "session.completed", "--secret-file", secret,
         "--allow-private-urls"],
        env={**env, "EARSHOT_URL": base + "/", "EARSHOT_API_KEY": key},
        stdout=subprocess.DEVNULL, check=True)

    taken = []
    lock = threading.Lock()

    class App(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("content-length", 0)))
            with lock:
                taken.append((json.loads(body)["event_id"], time.monotonic()))
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args):
            pass

    started = time.monotonic()
    sessions = events // 2
    killed = False
    for n in range(sessions):
        session = post(base + "/_emulator/sessions")["session_id"]
        post(f"{base}/_emulator/sessions/{session}/complete")
        if not killed and n >= sessions // 2:
            observer.send_signal(signal.SIGKILL)
            observer.wait()
            observer = start_observer()
            killed = True
        pause = started + down_s * (n + 1) / sessions - time.monotonic()
        if pause > 0:
            time.sleep(pause)

    app = http.server.ThreadingHTTPServer(("127.0.0.1", app_port), App)
    threading.Thread(target=app.serve_forever, daemon=True).start()
    app_up = time.monotonic()
    deadline = app_up + 120
    while time.monotonic() < deadline:
        with lock:
            if len({event for event, _ in taken}) >= events:
                break
        time.sleep(0.2)
    time.sleep(1)  # room for a duplicate, were one coming
    with lock:
        got = list(taken)
    observer.send_signal(signal.SIGTERM)
    observer.wait()
    emulator.send_signal(signal.SIGINT)
    emulator.wait()
    app.shutdown()

    stored = [row[0] for row in sqlite3.connect(os.path.join(work, "store.db")).execute(
        "SELECT event_id FROM events ORDER BY rowid")]
    ids = [event for event, _ in got]
    distinct = len(set(ids))
    drained = (max(at for _, at in got) - app_up) if got else float("nan")
    print(f"events sent by the platform: {events}; stored: {len(stored)}; "
          f"taken by the app: {distinct} distinct, {len(ids) - distinct} more than once; "
          f"in the order stored: {ids == stored}; backlog drained {drained:.2f} s after the "
          f"app started; observer killed with SIGKILL once at {sessions // 2} of {sessions} "
          f"sessions")
    subprocess.run(["rm", "-rf", work])
    sys.exit(0 if distinct == events == len(stored) and ids == stored else 1)


if __name__ == "__main__":
    main()
