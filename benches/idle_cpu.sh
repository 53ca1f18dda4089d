#!/bin/sh
# `benches/idle_cpu.sh target/release/earshot [SECONDS]`: idle CPU and RSS of
# the console (`earshot` against an idle emulator) in a private tmux server,
# next to `less` in the same server and window size, over the same seconds.
# Needs tmux; talks only to 127.0.0.1.
BIN=$1; SECS=${2:-20}
KEY=idle_key_0123456789
D=$(mktemp -d)
"$BIN" emulator --listen 127.0.0.1:0 --api-key "$KEY" > "$D/emu.out" 2>/dev/null &
EMU=$!
sleep 1
URL=$(sed -n 's/^listening on //p' "$D/emu.out")
S="-L earshot-idle-$$"
tmux $S new-session -d -x 120 -y 40 -n console "env EARSHOT_CONFIG=$D/none.toml EARSHOT_URL=$URL EARSHOT_API_KEY=$KEY $BIN"
tmux $S new-window -d -n less "less /etc/services"
sleep 5
C=$(tmux $S list-panes -t console -F '#{pane_pid}')
L=$(tmux $S list-panes -t less -F '#{pane_pid}')
T=$(tmux $S display -p '#{pid}')
ticks() { awk '{print $14+$15}' /proc/$1/stat; }
c0=$(ticks $C); l0=$(ticks $L); t0=$(ticks $T); e0=$(ticks $EMU)
sleep $SECS
c1=$(ticks $C); l1=$(ticks $L); t1=$(ticks $T); e1=$(ticks $EMU)
HZ=$(getconf CLK_TCK)
pct() { echo "$1 $2 $HZ $SECS" | awk '{printf "%.2f%%", ($2-$1)*100/($3*$4)}'; }
echo "idle over ${SECS}s: console $(pct $c0 $c1), less $(pct $l0 $l1), tmux server $(pct $t0 $t1), emulator $(pct $e0 $e1)"
echo "console VmRSS $(awk '/VmRSS/{print $2}' /proc/$C/status) kB, VmHWM $(awk '/VmHWM/{print $2}' /proc/$C/status) kB; less VmRSS $(awk '/VmRSS/{print $2}' /proc/$L/status) kB"
tmux $S capture-pane -p -t console | head -3
tmux $S kill-server
kill $EMU
rm -r "$D"
