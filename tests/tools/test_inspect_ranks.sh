#!/bin/sh
# test_inspect_ranks.sh TRNEMU EXAMPLES_DIR: two ranks of `trnemu launch`
# with NEURON_RT_INSPECT_ENABLE=1 and one NEURON_RT_INSPECT_OUTPUT_DIR each
# write their own capture, in the vendor's layout
# (<dir>/<instance id>_pid_<pid>/<timestamp>/system-trace-0.json), and each
# trace holds its own process's events; nothing is overwritten.
set -u
T=$1
EX=$2
W=$(mktemp -d "${TMPDIR:-/tmp}/trnemu-inspect-ranks.XXXXXX")
trap 'rm -rf "$W"' EXIT
export TRNEMU_SHM_DIR="$W/shm" NEURON_RT_LOG_LEVEL=ERROR
mkdir -p "$TRNEMU_SHM_DIR"
unset TRNEMU_INSTANCE TRNEMU_INSTANCE_NAME NEURON_RT_VISIBLE_CORES NEURON_LOGICAL_NC_CONFIG
NEURON_RT_INSPECT_ENABLE=1 NEURON_RT_INSPECT_OUTPUT_DIR="$W/inspect" TRNEMU_INSTANCE=trn1.32xlarge \
    "$T" launch --timeout 60 -n 2 -- "$T" run "$EX/add.neff" --output-dir "$W/out" \
    >"$W/launch.out" 2>&1 || { echo "FAIL: launch: $(cat "$W/launch.out")"; exit 1; }
n=$(ls -d "$W"/inspect/i-*_pid_* 2>/dev/null | wc -l)
[ "$n" -eq 2 ] || { echo "FAIL: $n per-process directories: $(ls -R "$W/inspect")"; exit 1; }
for d in "$W"/inspect/i-*_pid_*; do
    pid=${d##*_pid_}
    set -- "$d"/*/system-trace-0.json
    [ -f "$1" ] || { echo "FAIL: no system trace under $d: $(ls -R "$d")"; exit 1; }
    grep -q "\"process_id\":$pid," "$1" ||
        { echo "FAIL: $1 does not hold pid $pid's events: $(head -c 400 "$1")"; exit 1; }
done
echo "inspect per process: ok"
