#!/usr/bin/env python3
"""How soon a restarted observer answers, on a store that is already large.

    benches/listen_restart.py target/release/earshot STORE.db [RUNS]

Starts `earshot listen --store STORE.db --metrics-listen` on loopback RUNS
times (default 3), each time timing from the start to the `listening on`
line and to the first `GET /healthz` answered 200, then stops it (SIGTERM).
Build a store with `cargo bench --bench store_scale -- build`.
"""

import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

SECRET = "whsec_bench_secret_0123456789abcdefghij"


def once(binary, db, home):
    env = dict(os.environ, EARSHOT_CONFIG=os.path.join(home, "none.toml"),
               XDG_STATE_HOME=home, XDG_CONFIG_HOME=home)
    started = time.monotonic()
    child = subprocess.Popen(
        [binary, "listen", "--secret", SECRET, "--store", db, "--listen", "127.0.0.1:0",
         "--metrics-listen", "127.0.0.1:0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)
    try:
        child.stdout.readline()
        listening = time.monotonic() - started
        monitor = None
        while monitor is None:
            line = child.stderr.readline()
            if not line:
                raise SystemExit("listen stopped before serving /healthz")
            found = re.search(r"serving /healthz and /metrics on (\S+)", line)
            if found:
                monitor = found.group(1)
        while True:
            try:
                status = urllib.request.urlopen(monitor + "/healthz", timeout=2).status
            except urllib.error.HTTPError as error:
                status = error.code
            if status == 200:
                break
            time.sleep(0.01)
        healthy = time.monotonic() - started
        print(f"listening line {listening * 1000:.0f} ms, /healthz 200 at {healthy * 1000:.0f} ms")
    finally:
        child.terminate()
        child.wait()


def main():
    binary, db = sys.argv[1], sys.argv[2]
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    with tempfile.TemporaryDirectory() as home:
        for _ in range(runs):
            once(binary, db, home)


if __name__ == "__main__":
    main()
