#!/bin/sh
# `benches/events_idle_cpu.sh BEFORE_BIN AFTER_BIN STORE [SECONDS] [FILTER]`:
# the CPU of an idle console on the Events pane with a filter set, for two
# builds of `earshot` one after the other in the same run, each in a
# private tmux server (120x40) against an idle emulator, its profile's
# store STORE (a copy: the console opens it read-write). Ticks from
# /proc/PID/stat over SECONDS (default 60) after 20 s for the first read.
# FILTER defaults to `type:call.failed` (a rare type: the read walks the
# time index). Needs tmux; talks only to 127.0.0.1.
BEFORE=$1; AFTER=$2; STORE=$3; SECS=${4:-60}; FILTER=${5:-type:call.failed}
KEY=idle_key_0123456789
. "$(dirname "$0")/events_pane_console.sh"
measure() {
    BIN=$1; NAME=$2
    D=$(mktemp -d)
    "$BIN" emulator --listen 127.0.0.1:0 --api-key "$KEY" > "$D/emu.out" 2>/dev/null &
    EMU=$!
    sleep 1
    URL=$(sed -n 's/^listening on //p' "$D/emu.out")
    events_console "$BIN" "$URL" "$STORE" "$KEY" "$FILTER" "$D" earshot-events-idle
    echo "$NAME: console $(cpu_over "$SECS") of a core over ${SECS}s, filter '$FILTER'"
    tmux $TMUX_SERVER capture-pane -p -t console | sed -n "1,6p;/as of/p" | cut -c1-118
    tmux $TMUX_SERVER kill-server
    kill "$EMU"
    rm -r "$D"
}
measure "$BEFORE" before
measure "$AFTER" after
