#!/bin/sh
# `benches/demo_rss.sh OUT SECONDS EVERY BIN [BIN...]`: `earshot demo` as a
# user runs it, one per BIN side by side, each in a private 120x40 tmux
# server with a HOME of its own; every EVERY seconds (default 60) for
# SECONDS (default 7200) the VmRSS of each (from /proc) and the size of its
# store are appended to OUT/rss (a directory kept for reading during the
# run), then the least-squares slope of each over the last 40 minutes (or
# the last third of a shorter run) in MB a minute (issue 30: < 0.02 after
# warm-up). `benches/demo_rss.sh OUT` again prints the slopes of what
# OUT/rss holds so far. Needs tmux; the demo talks only to 127.0.0.1.
OUT=$1; SECS=${2:-7200}; EVERY=${3:-60}
slopes() {
  awk 'NR == 1 { for (i = 2; i <= NF; i += 2) name[i] = $i; next }
    { t[NR] = $1; for (i = 2; i <= NF; i += 2) v[NR, i] = $i; last = NR; cols = NF }
    END {
      window = t[last] >= 3600 ? 2400 : t[last] / 3; from = t[last] - window
      for (i = 2; i <= cols; i += 2) {
        n = 0; sx = 0; sy = 0; sxx = 0; sxy = 0
        for (r = 2; r <= last; r++) if (t[r] >= from && v[r, i] != "-") {
          x = t[r] / 60; y = v[r, i] / 1024
          n++; sx += x; sy += y; sxx += x * x; sxy += x * y
        }
        if (n < 3) continue
        slope = (n * sxy - sx * sy) / (n * sxx - sx * sx)
        printf "%s: %.1f MB at %d min, %.4f MB/min over the last %d min (%d samples)\n",
          name[i], v[last, i] / 1024, t[last] / 60, slope, window / 60, n
      }
    }' "$OUT/rss"
}
[ $# -eq 1 ] && { slopes; exit; }
shift 3
mkdir -p "$OUT"
header="elapsed_s"; i=0
for BIN in "$@"; do
  i=$((i + 1))
  mkdir -p "$OUT/home-$i"
  tmux -L "demo-rss-$$-$i" -f /dev/null new-session -d -x 120 -y 40 \
    "exec env HOME=$OUT/home-$i $BIN demo 2> $OUT/demo-$i.err"
  header="$header demo$i:$(basename "$BIN")_VmRSS_kB demo${i}_store_kB"
done
sleep 2
PIDS=""
for n in $(seq 1 "$i"); do
  PIDS="$PIDS $(tmux -L "demo-rss-$$-$n" list-panes -F '#{pane_pid}')"
done
echo "$header" > "$OUT/rss"
echo "pids:$PIDS; samples in $OUT/rss"
t=0
while [ "$t" -le "$SECS" ]; do
  line="$t"
  for PID in $PIDS; do
    rss=$(awk '/^VmRSS/ {print $2}' "/proc/$PID/status" 2>/dev/null)
    [ -z "$rss" ] && { echo "demo $PID exited"; rss=""; }
    store=$(du -sk /tmp/earshot-demo-history-"$PID"-* 2>/dev/null | awk '{print $1}')
    line="$line ${rss:--} ${store:--}"
  done
  echo "$line" >> "$OUT/rss"
  sleep "$EVERY"; t=$((t + EVERY))
done
for n in $(seq 1 "$i"); do tmux -L "demo-rss-$$-$n" kill-server; done
slopes
