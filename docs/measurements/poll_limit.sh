#!/usr/bin/env bash
# A platform polling limit below the spec's: `jobs watch` of 5 jobs (60 s of
# processing each) against `earshot emulator --poll-limit 20 --time-scale 1`;
# prints the emulator's 429 count and GETs. Usage: docs/measurements/poll_limit.sh
# [jobs watch flags, e.g. --per-job-limit 18]. Needs a built
# target/debug/earshot, curl and python3; works in a temp dir.
set -euo pipefail
earshot="$(cd "$(dirname "$0")/../.." && pwd)/target/debug/earshot"
work=$(mktemp -d)
trap 'kill "${emulator:-0}" 2>/dev/null || true; rm -rf "$work"' EXIT
cd "$work"
python3 -c '
import wave
w = wave.open("a.wav", "wb"); w.setnchannels(1); w.setsampwidth(2); w.setframerate(8000)
w.writeframes(b"\0\0" * 8000 * 240); w.close()'
key=measure_key_0123456789
"$earshot" emulator --listen 127.0.0.1:0 --poll-limit 20 --time-scale 1 --api-key "$key" > emulator.out 2>&1 &
emulator=$!
for _ in $(seq 50); do grep -q 'http://' emulator.out && break; sleep 0.1; done
url=$(grep -o 'http://127.0.0.1:[0-9]*' emulator.out | head -1)
field() { python3 -c "import sys, json; print(json.load(sys.stdin)['$1'])"; }
upload=$(curl -s -H "authorization: $key" --data-binary @a.wav "$url/v2/upload" | field upload_url)
ids=()
for _ in 1 2 3 4 5; do
  ids+=("$(curl -s -H "authorization: $key" -H 'content-type: application/json' \
    -d "{\"audio_url\":\"$upload\"}" "$url/v2/transcript" | field id)")
done
EARSHOT_URL=$url EARSHOT_API_KEY=$key "$earshot" jobs watch "$@" "${ids[@]}" > /dev/null 2> watch.err
tail -1 watch.err
curl -s "$url/_emulator/stats" | python3 -c '
import sys, json
stats = json.load(sys.stdin)
gets = stats["by_route"].get("GET /v2/transcript/{id}", {})
print("429:", gets.get("429", 0), " GET 200:", gets.get("200", 0))'
