#!/bin/sh
# top_tmux.sh: `trnemu top` in a real terminal: a tmux session (its own
# server socket) runs it while `trnemu run` executes on VNC 5; the screen
# must show the header, VNC 5 busy, the workload's pid and its model; q
# must end it. Skipped (exit 77) when tmux is not installed.
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
# The session inherits this environment (the instance name, the library).
tmux -L "$SOCK" -f /dev/null new-session -d -s top -x 132 -y 50 "$TRNEMU top" \
    || fail "tmux cannot start a session"
ok=0
for _ in $(seq 1 60); do
    sleep 0.25
    tmux -L "$SOCK" capture-pane -p -t top > "$TMP/screen" 2>/dev/null || continue
    if grep -q "trnemu top: trn2.48xlarge" "$TMP/screen" &&
       grep -Eq "^$WPID .* 2 " "$TMP/screen" &&
       grep -Eq " +5: *[0-9.]+%" "$TMP/screen" && ! grep -Eq " +5: *0\.0%" "$TMP/screen" &&
       grep -Eq "^5 +add " "$TMP/screen"; then
        ok=1
        break
    fi
done
[ "$ok" = 1 ] || fail "the screen never showed the header, VNC 5 busy, pid $WPID and its model"
tmux -L "$SOCK" send-keys -t top q
for _ in $(seq 1 40); do
    tmux -L "$SOCK" has-session -t top 2>/dev/null || { echo "trnemu top under tmux: ok"; exit 0; }
    sleep 0.1
done
fail "q did not end trnemu top"
