#!/bin/sh
# `benches/observer_rss.sh target/release/earshot [SECONDS] [EVERY]`: VmRSS
# of the observer, `earshot listen --store --sweep --metrics-listen`,
# subscribed to every event of `earshot emulator --traffic`, every EVERY
# seconds (default 10) for SECONDS (default 300), with the events it
# received and the sweeps it ran (from its /metrics, scraped at each
# sample, so serving them is in the figure), then the growth over the last
# half of the run. Talks only to 127.0.0.1; everything lives in a temp dir.
BIN=$1; SECS=${2:-300}; EVERY=${3:-10}
D=$(mktemp -d)
export EARSHOT_CONFIG="$D/no-config.toml"
"$BIN" emulator --traffic > "$D/emu.out" 2> "$D/emu.err" &
EMU=$!
lines() { [ -f "$1" ] && wc -l < "$1" || echo 0; }
i=0; while [ "$(lines "$D/emu.out")" -lt 2 ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
URL=$(sed -n 1p "$D/emu.out" | cut -d' ' -f3)
KEY=$(sed -n 2p "$D/emu.out" | cut -d' ' -f3)
printf 'whsec_observer_rss_0123456789abcdefghijkl\n' > "$D/secret"
EARSHOT_API_KEY=$KEY "$BIN" listen --secret-file "$D/secret" --store "$D/earshot.db" \
  --sweep --metrics-listen 127.0.0.1:0 --url "$URL" > "$D/listen.out" 2> "$D/listen.err" &
PID=$!
i=0; while [ "$(lines "$D/listen.out")" -lt 1 ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
HOOK=$(sed -n 1p "$D/listen.out" | cut -d' ' -f3)/observer
METRICS=$(sed -n 's|^serving /healthz and /metrics on ||p' "$D/listen.err")/metrics
EARSHOT_API_KEY=$KEY "$BIN" subs create --url "$URL" --allow-private-urls \
  --store "$D/earshot.db" --secret-file "$D/secret" \
  --event session.started,session.completed,call.connected,call.ended,call.failed \
  "$HOOK" > /dev/null || { echo "could not subscribe the observer"; exit 1; }
t=0
echo "elapsed_s VmRSS_kB events_received sweeps store_bytes" | tee "$D/rss"
while [ "$t" -le "$SECS" ]; do
  rss=$(awk '/^VmRSS/ {print $2}' "/proc/$PID/status" 2>/dev/null)
  [ -z "$rss" ] && { echo "the observer exited: $(tail -1 "$D/listen.err")"; exit 1; }
  figures=$(curl -s "$METRICS" | awk '
    /^earshot_events_received_total/ { events += $2 }
    /^earshot_sweeps_total/ { sweeps = $2 }
    /^earshot_store_size_bytes/ { bytes = $2 }
    END { printf "%d %d %d", events, sweeps, bytes }')
  echo "$t $rss $figures" | tee -a "$D/rss"
  sleep "$EVERY"; t=$((t + EVERY))
done
# Store writes under traffic and sweeps: how many events waited at most
# each bound (cumulative), from the observer's own histogram.
curl -s "$METRICS" | awk -F'[{}" ]+' '/^earshot_store_write_seconds_bucket/ { printf "writes <= %s s: %s\n", $3, $4 }'
kill -INT "$PID" "$EMU"
wait "$PID" "$EMU"
grep -c "the sweep failed" "$D/listen.err" | sed 's/^/sweep failures said: /'
awk -v secs="$SECS" 'NR > 1 && $1 >= secs / 2 && !s { s = $1; a = $2 } NR > 1 { e = $1; b = $2 }
  END { printf "last %d s: %.0f -> %.0f kB, %.3f MB/min\n", e - s, a, b, (b - a) / 1024 / ((e - s) / 60) }' "$D/rss"
rm -r "$D"
