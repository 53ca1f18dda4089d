# Sourced by the Events-pane CPU benchmarks (`events_idle_cpu.sh`,
# `events_idle_synced.sh`): the console on the Events pane with a filter
# set, in a private tmux server, and its CPU over a while.
#
# `events_console BIN URL STORE KEY FILTER DIR NAME` writes DIR/config.toml
# (one profile on URL with STORE), starts BIN in a 120x40 tmux server
# named NAME, opens the Events pane, types FILTER, waits 20 s for the first
# read, and leaves the server in $TMUX_SERVER and the console's pid in
# $CONSOLE. `cpu_over SECONDS` prints the share of a core the console used
# over SECONDS from then, as `12.34%`.
events_console() {
    printf 'default_profile = "bench"\n[profiles.bench]\nurl = "%s"\nstore = "%s"\n' \
        "$2" "$3" > "$6/config.toml"
    TMUX_SERVER="-L $7-$$"
    tmux $TMUX_SERVER new-session -d -x 120 -y 40 -n console \
        "env EARSHOT_CONFIG=$6/config.toml EARSHOT_API_KEY=$4 $1"
    sleep 3
    tmux $TMUX_SERVER send-keys -t console 8
    sleep 1
    tmux $TMUX_SERVER send-keys -t console / "$5" Enter
    sleep 20
    CONSOLE=$(tmux $TMUX_SERVER list-panes -t console -F '#{pane_pid}')
}

cpu_over() {
    c0=$(awk '{print $14+$15}' "/proc/$CONSOLE/stat")
    sleep "$1"
    c1=$(awk '{print $14+$15}' "/proc/$CONSOLE/stat")
    echo "$c0 $c1 $(getconf CLK_TCK) $1" | awk '{printf "%.2f%%", ($2-$1)*100/($3*$4)}'
}
