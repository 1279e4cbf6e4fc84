#!/bin/sh
# test_tool_errors.sh TRNEMU EXAMPLES_DIR VENDOR_NEFF_DIR KERNEL_DEMO: the
# trnemu tools blame the right thing when they fail, and say so in one
# line with the cause:
# - `trnemu run` in a bad environment (instance type, visible cores, LNC,
#   shared-memory directory, a VNC another process owns) reports that the
#   runtime did not start, never that MODEL.neff is invalid;
# - a file that is no NEFF is called that;
# - a stand-in run (TRNEMU_FOREIGN_NEFF=zeros) says so in its status line;
# - `trnemu replay` on a file holding only snapshots says how to restore;
# - `monitor -c`, `disasm -o` and `asm -o` give the OS's reason.
set -u
T=$1
EX=$2
VN=$3
KD=$4
W=$(mktemp -d "${TMPDIR:-/tmp}/trnemu-tool-errors.XXXXXX")
trap 'kill $holder 2>/dev/null; rm -rf "$W"' EXIT
holder=
export TRNEMU_SHM_DIR="$W/shm" TRNEMU_INSTANCE_NAME=tool-errors NEURON_RT_LOG_LEVEL=ERROR
mkdir -p "$TRNEMU_SHM_DIR"
unset TRNEMU_INSTANCE NEURON_LOGICAL_NC_CONFIG NEURON_RT_VISIBLE_CORES NEURON_RT_NUM_CORES
fail=0
bad() { echo "FAIL: $*"; fail=1; }

# run_env_fails WHAT VAR=VALUE...: the runtime refused to start, not the NEFF
run_env_fails() {
    what=$1
    shift
    env "$@" "$T" run "$EX/add.neff" --output-dir "$W/out" >"$W/o" 2>"$W/e"
    rc=$?
    [ $rc -eq 1 ] || bad "$what: exit $rc"
    grep -q "the runtime did not start" "$W/e" || bad "$what: $(cat "$W/e")"
    grep -q "add.neff: " "$W/e" && bad "$what blames the NEFF: $(cat "$W/e")"
}
run_env_fails "bad instance" TRNEMU_INSTANCE=trn9.huge
run_env_fails "bad visible cores" NEURON_RT_VISIBLE_CORES=999
run_env_fails "bad LNC" NEURON_LOGICAL_NC_CONFIG=3
run_env_fails "bad shm dir" TRNEMU_SHM_DIR="$W/no/such/dir"
# a VNC another live process owns
NEURON_RT_VISIBLE_CORES=0 "$T" run "$EX/add.neff" --repeat 1000000 --output-dir "$W/h" \
    >/dev/null 2>&1 &
holder=$!
for i in $(seq 100); do
    "$T" ls -j | grep -q "\"pid\": $holder" && break
    sleep 0.05
done
run_env_fails "owned VNC" NEURON_RT_VISIBLE_CORES=0
kill $holder; wait $holder 2>/dev/null; holder=

# not a NEFF
printf 'hello' >"$W/x.neff"
"$T" run "$W/x.neff" 2>"$W/e" >/dev/null && bad "a text file ran"
grep -q "x.neff is not a NEFF" "$W/e" || bad "not a NEFF: $(cat "$W/e")"

# a stand-in says so where the status is
TRNEMU_FOREIGN_NEFF=zeros "$T" run "$VN/vendor_one.neff" --output-dir "$W/v" >"$W/o" 2>"$W/e" ||
    bad "stand-in run failed: $(cat "$W/e")"
grep -q "^status: Success (0); stand-in: outputs are zeros" "$W/o" || bad "stand-in: $(cat "$W/o")"
"$T" run "$EX/add.neff" --output-dir "$W/a" >"$W/o" 2>&1
grep -q "stand-in" "$W/o" && bad "a computed run called a stand-in: $(cat "$W/o")"

# replay on a snapshot-only file
TRNEMU_INSTANCE=trn1.2xlarge TRNEMU_SNAPSHOT_AT=1 TRNEMU_SNAPSHOT_FILE="$W/s.db" \
    "$KD" "$EX/softmax.neff" >/dev/null 2>&1
[ -s "$W/s.db" ] || bad "kernel_demo left no snapshot"
"$T" replay "$W/s.db" >/dev/null 2>"$W/e"
rc=$?
[ $rc -eq 2 ] || bad "replay of a snapshot-only file: exit $rc"
grep -q "TRNEMU_RESTORE=$W/s.db" "$W/e" || bad "replay gives no restore hint: $(cat "$W/e")"

# the OS's reason
"$T" monitor -c "$W/none.json" --count 1 2>"$W/e" >/dev/null
grep -q "none.json: No such file or directory" "$W/e" || bad "monitor -c: $(cat "$W/e")"
"$T" disasm "$EX/add.neff" -o "$W/no/dir/x.s" 2>"$W/e"
grep -q "x.s: No such file or directory" "$W/e" || bad "disasm -o: $(cat "$W/e")"
[ $fail -eq 0 ] && echo "tool errors name their cause: ok"
exit $fail
