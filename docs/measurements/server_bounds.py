#!/usr/bin/env python3
"""What hostile peers cost a release binary, four cases: peak RSS (VmHWM
from /proc) of the emulator and check-receiver against an endless receiver
(endless), a 0.96 MB WAV comment in dictation with a small request
alongside (comment), 3000 half-sent connections to the emulator
(half_open), `listen --json` with stdout never read (unread_stdout).
Everything runs on 127.0.0.1.

usage: python3 docs/measurements/server_bounds.py target/release/earshot [endless comment half_open unread_stdout]
       (N=500 ... unread_stdout changes the number of 1 MiB requests)"""
import hashlib, hmac, json, os, socket, struct, subprocess, sys, threading, time, urllib.request

BIN = sys.argv[1]
KEY = "emu_measure_key_0123456789"
SECRET = "whsec_measure_secret_0123456789abcdefghij"

def hwm(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) // 1024
def rss(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) // 1024
def fds(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))

def endless(status, line):
    srv = socket.socket(); srv.bind(("127.0.0.1", 0)); srv.listen(64)
    def serve(c):
        try:
            c.settimeout(5); data = b""
            while b"\r\n\r\n" not in data:
                d = c.recv(65536)
                if not d: return
                data += d
            c.sendall(f"HTTP/1.1 {status} X\r\ncontent-type: text/plain\r\ntransfer-encoding: chunked\r\n\r\n".encode())
            block = (line * (65536 // len(line))).encode()
            chunk = b"%x\r\n" % len(block) + block + b"\r\n"
            end = time.time() + 20
            while time.time() < end:
                c.sendall(chunk)
        except Exception:
            pass
        finally:
            c.close()
    def loop():
        while True:
            c, _ = srv.accept(); threading.Thread(target=serve, args=(c,), daemon=True).start()
    threading.Thread(target=loop, daemon=True).start()
    return srv.getsockname()[1]

def start_emulator(scale="1"):
    p = subprocess.Popen([BIN, "emulator", "--api-key", KEY, "--allow-private-urls", "--time-scale", scale],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    url = p.stdout.readline().strip().split()[-1]
    return p, url

def call(url, path, body=None, method="POST", headers=None):
    h = {"authorization": KEY, "content-type": "application/json"}
    h.update(headers or {})
    req = urllib.request.Request(url + path, data=None if body is None else json.dumps(body).encode(), headers=h, method=method)
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read() or b"null")

def endless():
    port = endless(200, "fine ")
    p, url = start_emulator("0.2")  # deadline 3 s
    call(url, "/v1/webhook-subscriptions", {"url": f"http://127.0.0.1:{port}/", "events": ["call.failed"], "secret": SECRET})
    call(url, "/_emulator/calls", {"outcome": "failed"})
    time.sleep(4)
    print(f"endless: emulator peak RSS after an endless 200 answer: {hwm(p.pid)} MiB")
    p.terminate(); p.wait()
    t = subprocess.run(["/usr/bin/time", "-f", "%M", BIN, "check-receiver", f"http://127.0.0.1:{port}/", "--secret", SECRET, "--timeout", "3"],
                       capture_output=True, text=True)
    print(f"endless: check-receiver peak RSS (3 s timeout): {int(t.stderr.strip().splitlines()[-1]) // 1024} MiB")

def half_open():
    p, url = start_emulator()
    port = int(url.rsplit(":", 1)[1].strip("/"))
    base_fds, base_rss = fds(p.pid), rss(p.pid)
    socks = []
    for _ in range(3000):
        s = socket.socket(); s.connect(("127.0.0.1", port)); s.sendall(b"GET /v1/webhook-subscriptions HTTP/1.1\r\nHost: x"); socks.append(s)
    time.sleep(2)
    print(f"half_open: 3000 half-sent connections: emulator fds {base_fds} -> {fds(p.pid)}, RSS {base_rss} -> {rss(p.pid)} MiB")
    time.sleep(10)
    closed = 0
    for s in socks:
        s.setblocking(False)
        try:
            if s.recv(1) == b"": closed += 1
        except BlockingIOError: pass
        except OSError: closed += 1
    print(f"half_open: after 12 s, {closed} of 3000 closed by the server; fds {fds(p.pid)}")
    for s in socks: s.close()
    p.terminate(); p.wait()

def unread_stdout():
    p = subprocess.Popen([BIN, "listen", "--json", "--secret", SECRET], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    url = p.stdout.readline().decode().strip().split()[-1]
    pad = "p" * (1024 * 1024)
    for i in range(int(os.environ.get("N", "200"))):
        body = json.dumps({"event_id": f"evt-{i}", "event": "call.ended", "padding": pad}).encode()
        t = int(time.time())
        sig = hmac.new(SECRET.encode(), f"{t}.".encode() + body, hashlib.sha256).hexdigest()
        req = urllib.request.Request(url + "/hook", data=body, headers={"content-type": "application/json", "x-svc-signature": f"t={t},v1={sig}"})
        with urllib.request.urlopen(req, timeout=30) as r:
            assert r.status == 200
    print(f"unread_stdout: listen --json, stdout unread, 200 x 1 MiB: peak RSS {hwm(p.pid)} MiB")
    p.kill(); p.wait()

def comment():
    p, url = start_emulator()
    comment = ("meet on tuesday, no, wednesday um at three, " * 22000).encode() + b"\0"
    def chunk(i, b): return i + struct.pack("<I", len(b)) + b + (b"\0" if len(b) % 2 else b"")
    fmt = struct.pack("<HHIIHH", 1, 1, 8000, 16000, 2, 16)
    body = chunk(b"fmt ", fmt) + chunk(b"LIST", b"INFO" + chunk(b"ICMT", comment)) + chunk(b"data", b"\0" * 16000)
    wav = b"RIFF" + struct.pack("<I", 4 + len(body)) + b"WAVE" + body
    small = b"RIFF" + struct.pack("<I", 4 + 8 + 16 + 8 + 16000) + b"WAVE" + chunk(b"fmt ", fmt) + chunk(b"data", b"\0" * 16000)
    def post(audio):
        b = "bnd"
        data = (f"--{b}\r\nContent-Disposition: form-data; name=\"config\"\r\nContent-Type: application/json\r\n\r\n{{}}\r\n"
                f"--{b}\r\nContent-Disposition: form-data; name=\"audio\"\r\nContent-Type: audio/wav\r\n\r\n").encode() + audio + f"\r\n--{b}--\r\n".encode()
        req = urllib.request.Request(url + "/v1/transcribe/live", data=data, headers={"authorization": KEY, "content-type": f"multipart/form-data; boundary={b}"})
        with urllib.request.urlopen(req, timeout=600) as r:
            return r.status
    out = {}
    def big():
        t0 = time.time(); out["big"] = (post(wav), time.time() - t0)
    th = threading.Thread(target=big); th.start(); time.sleep(0.3)
    t0 = time.time(); s = post(small); small_t = time.time() - t0
    th.join()
    print(f"comment: 0.96 MB comment: {out['big'][0]} in {out['big'][1]:.1f} s; a small request meanwhile: {s} in {small_t:.1f} s; emulator peak RSS {hwm(p.pid)} MiB")
    p.terminate(); p.wait()

for name in sys.argv[2:] or ["endless", "comment", "half_open", "unread_stdout"]:
    globals()[name]()
