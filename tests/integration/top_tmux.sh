#!/bin/sh
# top_tmux.sh: `trnemu top` in real terminals: tmux sessions (on their own
# server socket) of 80x24 and 160x40 run it while `trnemu run` executes on
# VNC 5; each screen, read back with capture-pane, must start with the
# title (nothing wrapped or scrolled it away), keep every line inside the
# width, and show the core section with VNC 5 busy, the vCPU and memory
# sections, the workload's pid and its model; F must switch the cores to
# GFLOP/s, q must end it. Skipped
# (exit 77) when tmux is not installed.
# Usage: top_tmux.sh TRNEMU EXAMPLES_DIR
set -u
TRNEMU=$1 EXAMPLES=$2
if ! command -v tmux >/dev/null 2>&1; then
    echo "SKIP: tmux is not installed (scripts/setup.sh installs it)"
    exit 77
fi
TMP=$(mktemp -d)
SOCK="trnemu-top-test-$$"
WPID=
cleanup() {
    [ -n "$WPID" ] && kill "$WPID" 2>/dev/null && wait "$WPID" 2>/dev/null
    tmux -L "$SOCK" kill-server 2>/dev/null
    rm -rf "$TMP"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; echo "--- screen:"; cat "$TMP/screen" 2>/dev/null; exit 1; }

NEURON_RT_VISIBLE_CORES=4-5 "$TRNEMU" run "$EXAMPLES/add.neff" --repeat 400000 --vnc 1 \
    --output-dir "$TMP" >/dev/null 2>&1 &
WPID=$!

# screen_ok W H: the captured screen fits and shows every section
screen_ok() {
    [ "$(wc -l < "$TMP/screen")" -le "$2" ] &&
    head -n 1 "$TMP/screen" | grep -q "^neuron-top (trnemu, runtime " &&
    ! awk -v w="$1" 'length($0) >= w { bad = 1 } END { exit !bad }' "$TMP/screen" &&
    grep -q "^NeuronCore v3d Utilization" "$TMP/screen" &&
    grep -Eq " +5: *[0-9.]+%" "$TMP/screen" && ! grep -Eq " +5: *0\.0%" "$TMP/screen" &&
    grep -q "^vCPU Utilization  system: " "$TMP/screen" &&
    grep -q "^Memory Usage Summary" "$TMP/screen" &&
    grep -Eq "^  Device total [0-9.]+MB: tensors [0-9.]*[1-9][0-9.]*MB" "$TMP/screen" &&
    grep -Eq "^$WPID .* 2 " "$TMP/screen" &&
    grep -Eq "^5 +add " "$TMP/screen"
}

for size in 80x24 160x40; do
    w=${size%x*} h=${size#*x}
    # The session inherits this environment (the instance name, the library).
    tmux -L "$SOCK" -f /dev/null new-session -d -s top -x "$w" -y "$h" "$TRNEMU top" \
        || fail "tmux cannot start a session"
    ok=0
    for _ in $(seq 1 60); do
        sleep 0.25
        tmux -L "$SOCK" capture-pane -p -t top > "$TMP/screen" 2>/dev/null || continue
        if screen_ok "$w" "$h"; then
            ok=1
            break
        fi
    done
    [ "$ok" = 1 ] || fail "$size: the screen never showed every section within the terminal"
    # F: the cores' GFLOP/s instead (add.neff does no matmul: 0)
    tmux -L "$SOCK" send-keys -t top F
    ok=0
    for _ in $(seq 1 20); do
        sleep 0.1
        tmux -L "$SOCK" capture-pane -p -t top > "$TMP/screen" 2>/dev/null || continue
        if grep -q "^NeuronCore v3d GFLOP/s" "$TMP/screen" && grep -Eq " +5: +0G" "$TMP/screen"
        then
            ok=1
            break
        fi
    done
    [ "$ok" = 1 ] || fail "$size: F did not switch to GFLOP/s"
    tmux -L "$SOCK" send-keys -t top q
    gone=0
    for _ in $(seq 1 40); do
        tmux -L "$SOCK" has-session -t top 2>/dev/null || { gone=1; break; }
        sleep 0.1
    done
    [ "$gone" = 1 ] || fail "$size: q did not end trnemu top"
done
echo "trnemu top under tmux at 80x24 and 160x40: ok"
