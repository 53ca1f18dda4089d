#!/bin/sh
# `benches/traffic_rss.sh target/release/earshot [SECONDS] [EVERY]`: VmRSS of
# `earshot emulator --traffic` every EVERY seconds (default 30) for SECONDS
# (default 600), then the growth over the last third of the run in MB a
# minute (bounded memory: near zero once the caps are full, ~13 min in).
# Talks only to 127.0.0.1.
BIN=$1; SECS=${2:-600}; EVERY=${3:-30}
D=$(mktemp -d)
"$BIN" emulator --traffic > "$D/out" 2> "$D/err" &
PID=$!
t=0
echo "elapsed_s VmRSS_kB" | tee "$D/rss"
while [ "$t" -le "$SECS" ]; do
  rss=$(awk '/^VmRSS/ {print $2}' "/proc/$PID/status" 2>/dev/null)
  [ -z "$rss" ] && { echo "the emulator exited: $(tail -1 "$D/err")"; exit 1; }
  echo "$t $rss" | tee -a "$D/rss"
  sleep "$EVERY"; t=$((t + EVERY))
done
kill -INT "$PID"
wait "$PID"
awk -v secs="$SECS" 'NR > 1 && $1 >= secs * 2 / 3 && !s { s = $1; a = $2 } NR > 1 { e = $1; b = $2 }
  END { printf "last %d s: %.0f -> %.0f kB, %.3f MB/min\n", e - s, a, b, (b - a) / 1024 / ((e - s) / 60) }' "$D/rss"
rm -r "$D"
