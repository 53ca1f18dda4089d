#!/bin/sh
# `benches/events_idle_synced.sh EARSHOT [SESSIONS] [SECONDS] [FILTER]`: the
# CPU of a console left on the Events pane with a filter set, on a store
# in step with its platform, with nothing happening. An emulator (no
# traffic, time scale 0.05), an observer (`listen --store`) subscribed to
# it, SESSIONS sessions (default 300) started and completed through the
# control routes and delivered; then the console (private tmux server,
# 120x40) on that emulator and store, its own sweep on, the Events pane
# with FILTER (default `type:completed`), 20 s to settle, then ticks from
# /proc/PID/stat over SECONDS (default 60). Prints the console's CPU and
# how often what a list shows changed meanwhile (`list_changes`; needs
# the sqlite3 shell). Talks only to 127.0.0.1.
BIN=$1; SESSIONS=${2:-300}; SECS=${3:-60}; FILTER=${4:-type:completed}
KEY=idle_key_0123456789
D=$(mktemp -d)
. "$(dirname "$0")/events_pane_console.sh"
"$BIN" emulator --listen 127.0.0.1:0 --api-key "$KEY" --time-scale 0.05 --allow-private-urls > "$D/emu.out" 2>/dev/null &
EMU=$!
printf 'whsec_idle_bench_secret_0123456789abcd' > "$D/secret"
"$BIN" listen --secret-file "$D/secret" --store "$D/store.db" > "$D/obs.out" 2>/dev/null &
OBS=$!
sleep 1
URL=$(sed -n 's/^listening on //p' "$D/emu.out")
HOOK=$(sed -n 's/^listening on //p' "$D/obs.out" | head -1)
"$BIN" subs create --url "$URL" --api-key "$KEY" --allow-private-urls --store "$D/store.db" \
    --event session.started,session.completed --secret-file "$D/secret" "$HOOK" > /dev/null
i=0
while [ "$i" -lt "$SESSIONS" ]; do
    ID=$(curl -s -X POST -H "Authorization: $KEY" -H 'content-type: application/json' \
        -d '{}' "$URL/_emulator/sessions" | sed -n 's/.*"session_id":"\([^"]*\)".*/\1/p')
    curl -s -X POST -H "Authorization: $KEY" "$URL/_emulator/sessions/$ID/complete" > /dev/null
    i=$((i + 1))
done
sleep 5
events_console "$BIN" "$URL" "$D/store.db" "$KEY" "$FILTER" "$D" earshot-idle-synced
v0=$(sqlite3 "$D/store.db" 'SELECT n FROM list_changes')
cpu=$(cpu_over "$SECS")
v1=$(sqlite3 "$D/store.db" 'SELECT n FROM list_changes')
echo "console $cpu of a core over ${SECS}s, filter '$FILTER', $SESSIONS sessions; list changes meanwhile: $((v1 - v0))"
tmux $TMUX_SERVER capture-pane -p -t console | sed -n "2p;/as of/p" | cut -c1-118
tmux $TMUX_SERVER kill-server
kill "$OBS" "$EMU"
rm -r "$D"
