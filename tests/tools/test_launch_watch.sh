#!/bin/sh
# test_launch_watch.sh TRNEMU EXAMPLES_DIR: a job started by `trnemu launch`
# runs on an instance of its own; launch names it on stderr, the tools read
# it by that name (--instance NAME) as the machine it emulates, and `trnemu ls --stats` without a
# name lists it among the live instances instead of only saying there is
# none. As the README shows it: launch, then ls --stats / monitor.
set -u
T=$1
EX=$2
W=$(mktemp -d "${TMPDIR:-/tmp}/trnemu-launch-watch.XXXXXX")
export TRNEMU_SHM_DIR="$W/shm" NEURON_RT_LOG_LEVEL=ERROR
mkdir -p "$TRNEMU_SHM_DIR"
unset TRNEMU_INSTANCE TRNEMU_INSTANCE_NAME NEURON_RT_VISIBLE_CORES NEURON_LOGICAL_NC_CONFIG
TRNEMU_INSTANCE=trn1.32xlarge "$T" launch --timeout 30 -n 2 -- "$T" run "$EX/add.neff" --repeat 1000000 \
    --output-dir "$W/out" >/dev/null 2>"$W/launch.err" &
job=$!
trap 'kill $job 2>/dev/null; wait $job 2>/dev/null; rm -rf "$W"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

name=
for i in $(seq 100); do
    name=$(sed -n 's/^trnemu launch: instance \([^ ]*\) .*/\1/p' "$W/launch.err")
    [ -n "$name" ] && "$T" ls --stats --instance "$name" 2>/dev/null | grep -q "owns 1 VNC" &&
        [ "$("$T" ls --stats --instance "$name" | grep -c 'owns 1 VNC')" -eq 2 ] && break
    sleep 0.1
done
[ -n "$name" ] || bad "launch did not name its instance: $(cat "$W/launch.err")"
"$T" ls --stats --instance "$name" >"$W/stats"
grep -q "^instance: .*trnemu-$name " "$W/stats" || bad "ls --stats --instance: $(cat "$W/stats")"
[ "$(grep -c 'owns 1 VNC' "$W/stats")" -eq 2 ] || bad "two ranks expected: $(cat "$W/stats")"
# without a name: the default instance is not live, the job's is listed
"$T" ls --stats >"$W/plain"
grep -q "no live instance" "$W/plain" || bad "ls --stats: $(cat "$W/plain")"
grep -q "^  $name  *trn1.32xlarge  *2 processes" "$W/plain" || bad "not listed: $(cat "$W/plain")"
"$T" ls --stats --json | grep -q "\"$name\"" || bad "ls --stats --json does not list $name"
# neuron-monitor by name: both ranks
printf '{"period": "200ms", "neuron_runtimes": [{"metrics": [{"type": "execution_stats"}]}]}' \
    >"$W/m.json"
"$T" monitor --instance "$name" -c "$W/m.json" --count 1 >"$W/mon"
n=$(grep -o '"pid":' "$W/mon" | wc -l)
[ "$n" -eq 2 ] || bad "monitor --instance sees $n runtimes"
# the machine is the instance's (trn1.32xlarge), not the environment's default
grep -q '"neuron_device_type":"trainium"' "$W/mon" || bad "monitor: $(cat "$W/mon")"
"$T" ls --stats --instance "bad/name" >/dev/null 2>&1 && bad "a bad name was accepted"
[ $fail -eq 0 ] && echo "launch's instance watched by name: ok"
exit $fail
