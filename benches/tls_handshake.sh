#!/bin/sh
# `benches/tls_handshake.sh target/release/earshot [SECONDS]`: what a full
# TLS handshake costs `earshot listen --tls-cert` (TLS 1.3, an ECDSA P-256
# certificate). `openssl s_time -new` makes a new connection and full
# handshake after another for SECONDS (default 10); the server's CPU time
# (utime + stime from /proc) over the run, divided by the handshakes, is
# the cost per handshake. The openssl command is only the client (earshot
# links rustls). Talks only to 127.0.0.1; Linux (reads /proc).
set -e
BIN=$1; SECS=${2:-10}
D=$(mktemp -d)
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
  -keyout "$D/key.pem" -out "$D/cert.pem" -days 1 -subj /CN=localhost \
  -addext "subjectAltName=IP:127.0.0.1" 2>/dev/null
EARSHOT_WEBHOOK_SECRET=whsec_bench_secret_0123456789abcdefghijkl \
  "$BIN" listen --tls-cert "$D/cert.pem" --tls-key "$D/key.pem" > "$D/out" 2> "$D/err" &
PID=$!
while [ ! -s "$D/out" ]; do sleep 0.1; done
ADDR=$(head -1 "$D/out" | sed 's|listening on https://||')
ticks() { awk '{print $14 + $15}' "/proc/$PID/stat"; }
HZ=$(getconf CLK_TCK)
before=$(ticks)
openssl s_time -connect "$ADDR" -new -time "$SECS" > "$D/s_time" 2>&1
after=$(ticks)
kill -TERM "$PID"
wait "$PID" || true
count=$(awk '/connections in .* real seconds/ {print $1}' "$D/s_time")
cpu_ms=$(( (after - before) * 1000 / HZ ))
echo "$count handshakes in ${SECS} s; server CPU ${cpu_ms} ms; per handshake:" \
  "$(awk -v ms="$cpu_ms" -v n="$count" 'BEGIN { printf "%.3f ms", ms / n }')"
rm -rf "$D"
