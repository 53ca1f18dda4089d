#!/usr/bin/env python3
"""Bytes the console writes to its terminal, per event and per second.

    benches/console_bytes.py target/release/earshot [--seconds 15]
        [--sizes 120x40,80x24] [--panes inbox,events,health,jobs]
        [--rates 1,10,100] [--modes ratatui,scroll,low]

The default matrix (one mode, 2 sizes x 3 rates, 4 panes of 15 s each per
run) takes about seven minutes.

Each cell of the matrix is one run of the real binary, `earshot demo
--traffic-rate R`, inside a pseudo-terminal of the given size that this
script owns: it answers the cursor-position query, switches to the pane
(its number key), lets its first screens pass (2 s), then counts every byte
the console writes for `--seconds`; the panes follow one another in the
same run. The events in that window are counted by the demo's observer,
not assumed: rows of the `events` table of the demo's store (its Inbox
files every webhook it accepts) read at the start and the end of the
window. Then SIGTERM, and the console must restore the terminal
(the scroll region reset and the main screen back) before it exits.

`--modes` runs every cell once per mode: `ratatui` is `EARSHOT_SCREEN=ratatui`
(ratatui's own backend, every change drawn at once: the console as it was,
the "before" in the same run on the same machine), `scroll` the console as
it is, `low` the same with `--low-bandwidth`. Talks only to 127.0.0.1 (the
demo's emulator, receivers and Inbox are on loopback). Prints a Markdown
table; a rate of `demo` runs the demo's own traffic (no `--traffic-rate`).
"""

import argparse
import fcntl
import glob
import os
import pty
import select
import signal
import sqlite3
import struct
import subprocess
import sys
import tempfile
import termios
import time

PANE_KEYS = {"health": "1", "deliveries": "3", "jobs": "4", "inbox": "7", "events": "8"}
# What the console prints when it leaves: the main screen back.
LEAVE_ALTERNATE = b"\x1b[?1049l"
# The scroll region and the rendition reset on the way out.
RESET_REGION = b"\x1b[r\x1b[0m"


class Console:
    """One `earshot demo` in a pty, its output counted."""

    def __init__(self, binary, size, rate, env_extra, flags=()):
        cols, rows = size
        self.rows, self.cols = rows, cols
        self.home = tempfile.mkdtemp(prefix="earshot-bytes-")
        self.tmp = os.path.join(self.home, "tmp")
        os.mkdir(self.tmp)
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": self.home,
            "TMPDIR": self.tmp,
            "TERM": "xterm-256color",
            "LANG": "C.UTF-8",
        }
        env.update(env_extra)
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        self.master = master
        self.proc = subprocess.Popen(
            [binary, "demo", *flags]
            + ([] if rate == "demo" else ["--traffic-rate", str(rate)]),
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env=env,
            start_new_session=True,
            pass_fds=(),
        )
        os.close(slave)
        self.counted = 0
        self.tail = b""

    def pump(self, seconds, count):
        """Reads the console's output for `seconds`; counts it if `count`."""
        deadline = time.monotonic() + seconds
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            ready, _, _ = select.select([self.master], [], [], left)
            if not ready:
                continue
            try:
                data = os.read(self.master, 65536)
            except OSError:
                return
            if not data:
                return
            if b"\x1b[6n" in data:
                os.write(self.master, b"\x1b[%d;%dR" % (self.rows, self.cols))
            if count:
                self.counted += len(data)
            self.tail = (self.tail + data)[-4096:]

    def key(self, key):
        os.write(self.master, key.encode())

    def events(self):
        """Rows of the `events` table of the demo's store (the observer's)."""
        found = glob.glob(os.path.join(self.tmp, "earshot-demo-history-*", "*.db"))
        if not found:
            return None
        db = sqlite3.connect(found[0], timeout=10)
        try:
            return db.execute("SELECT count(*) FROM events").fetchone()[0]
        finally:
            db.close()

    def stop(self):
        """SIGTERM; answers whether the terminal was put back."""
        self.proc.send_signal(signal.SIGTERM)
        end = time.monotonic() + 15
        while self.proc.poll() is None and time.monotonic() < end:
            self.pump(0.2, False)
        self.pump(0.2, False)
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        os.close(self.master)
        subprocess.run(["rm", "-rf", self.home], check=False)
        return RESET_REGION in self.tail and LEAVE_ALTERNATE in self.tail


MODES = {
    "ratatui": ({"EARSHOT_SCREEN": "ratatui"}, ()),
    "scroll": ({}, ()),
    "low": ({}, ("--low-bandwidth",)),
}


def measure(binary, size, rate, seconds, mode, panes):
    """One demo at `size` and `rate` in `mode`: each pane in turn, its
    bytes and the events of its window; and whether the terminal was put
    back at the end."""
    env_extra, flags = MODES[mode]
    console = Console(binary, size, rate, env_extra, flags)
    results = []
    try:
        # The demo starts its emulator and traffic, then the console.
        console.pump(4.0, False)
        for pane in panes:
            console.key(PANE_KEYS[pane])
            console.pump(2.0, False)
            before = console.events()
            console.counted = 0
            started = time.monotonic()
            console.pump(seconds, True)
            elapsed = time.monotonic() - started
            after = console.events()
            events = None if before is None or after is None else after - before
            results.append((pane, {"bytes": console.counted, "seconds": elapsed, "events": events}))
    finally:
        restored = console.stop()
    return results, restored


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("binary")
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--sizes", default="120x40,80x24")
    parser.add_argument("--panes", default="inbox,events,health,jobs")
    parser.add_argument("--rates", default="1,10,100")
    parser.add_argument("--modes", default="scroll")
    args = parser.parse_args()
    sizes = [tuple(int(n) for n in s.split("x")) for s in args.sizes.split(",")]
    modes = args.modes.split(",")
    for mode in modes:
        if mode not in MODES:
            parser.error("unknown mode %r; modes: %s" % (mode, ", ".join(MODES)))
    print("| size | pane | events/s asked | events/s seen | mode | bytes/event | bytes/s | restored |")
    print("|---|---|---|---|---|---|---|---|")
    for size in sizes:
        for rate in args.rates.split(","):
            for mode in modes:
                results, restored = measure(
                    args.binary, size, rate, args.seconds, mode, args.panes.split(",")
                )
                for pane, r in results:
                    per_s = r["bytes"] / r["seconds"]
                    if r["events"]:
                        seen = "%.1f" % (r["events"] / r["seconds"])
                        per_event = "{:,.0f}".format(r["bytes"] / r["events"])
                    else:
                        seen, per_event = "unknown", "unknown"
                    print(
                        "| %dx%d | %s | %s | %s | %s | %s | %s | %s |"
                        % (
                            size[0],
                            size[1],
                            pane,
                            rate,
                            seen,
                            mode,
                            per_event,
                            "{:,.0f}".format(per_s),
                            "yes" if restored else "NO",
                        ),
                        flush=True,
                    )


if __name__ == "__main__":
    sys.exit(main())
