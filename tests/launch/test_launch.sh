#!/bin/sh
# test_launch.sh TRNEMU: `trnemu launch` with small shell ranks: each rank's
# environment, exit status aggregation, a crashing rank, waiting for the
# others after a failure, --timeout (124), SIGTERM forwarding, the
# instance directory clean-up and usage errors. Takes about 3 seconds.
set -u
T=$1
W=$(mktemp -d "${TMPDIR:-/tmp}/trnemu-launch-test.XXXXXX")
trap 'rm -rf "$W"' EXIT
unset TRNEMU_INSTANCE_NAME
export TRNEMU_SHM_DIR="$W/shm"
mkdir -p "$TRNEMU_SHM_DIR"
fails=0

fail() {
    echo "FAIL: $*"
    fails=$((fails + 1))
}

# expect_rc WHAT WANT GOT
expect_rc() {
    [ "$3" -eq "$2" ] || fail "$1: exit status $3, want $2"
}

# expect_grep WHAT PATTERN FILE
expect_grep() {
    grep -q -- "$2" "$3" || { fail "$1: no '$2' in:"; cat "$3"; }
}

# 1. Each rank's environment.
"$T" launch -n 3 --cores-per-rank 2 --first-core 4 -- sh -c \
    'echo "$RANK $LOCAL_RANK $WORLD_SIZE $NEURON_RT_VISIBLE_CORES $TRNEMU_INSTANCE_NAME"' \
    >"$W/env" 2>"$W/err"
expect_rc "env" 0 $?
sort "$W/env" | sed 's/launch-[0-9][0-9]*$/launch-PID/' >"$W/env.sorted"
printf '%s\n' "0 0 3 4-5 launch-PID" "1 1 3 6-7 launch-PID" "2 2 3 8-9 launch-PID" \
    >"$W/env.want"
cmp -s "$W/env.sorted" "$W/env.want" || { fail "env:"; cat "$W/env"; }
[ "$(cut -d' ' -f5 "$W/env" | sort -u | wc -l)" -eq 1 ] || fail "env: ranks got different instance names"
"$T" launch -n 2 -- sh -c 'echo "$NEURON_RT_VISIBLE_CORES"' | sort >"$W/k1"
printf '0\n1\n' | cmp -s - "$W/k1" || fail "default cores per rank"
TRNEMU_INSTANCE_NAME=mine "$T" launch -n 2 -- sh -c 'echo "$TRNEMU_INSTANCE_NAME"' >"$W/name"
[ "$(sort -u "$W/name")" = mine ] || fail "a set TRNEMU_INSTANCE_NAME is kept"

# 2. Exit statuses: 0 only if every rank exits 0; one line per failed rank.
"$T" launch -n 4 -- true
expect_rc "all succeed" 0 $?
# Rank 1 fails first: rank 3 fails only once the launcher has reaped rank 1.
"$T" launch -n 4 -- sh -c '
    f="'"$W"'/pid1"
    case $RANK in
    1) echo $$ >"$f.tmp"; mv "$f.tmp" "$f"; exit 2 ;;
    3) while [ ! -e "$f" ]; do sleep 0.01; done
       while kill -0 "$(cat "$f")" 2>/dev/null; do sleep 0.01; done
       exit 4 ;;
    esac' 2>"$W/err"
expect_rc "ranks 1 and 3 fail" 2 $?
expect_grep "failed rank 1" "rank 1 (pid [0-9]*) exited with status 2 (first failure)" "$W/err"
expect_grep "failed rank 3" "rank 3 (pid [0-9]*) exited with status 4" "$W/err"
expect_grep "count" "2 of 4 ranks failed" "$W/err"
grep -q "rank [02] " "$W/err" && fail "succeeding ranks reported"
"$T" launch -n 2 --keep-going -- sh -c 'exit 7' 2>"$W/err"
expect_rc "--keep-going" 1 $?
"$T" launch -n 1 -- /nonexistent/prog 2>"$W/err"
expect_rc "cannot run" 127 $?
expect_grep "cannot run" "cannot run '/nonexistent/prog'" "$W/err"

# 3. A crashing rank is reported; the others are waited for.
"$T" launch -n 3 -- sh -c \
    'if [ "$RANK" = 1 ]; then kill -SEGV $$; fi; sleep 0.4; touch "'"$W"'/done.$RANK"' \
    2>"$W/err"
expect_rc "crash" $((128 + 11)) $?
expect_grep "crash" "rank 1 (pid [0-9]*) was killed by signal 11" "$W/err"
[ -e "$W/done.0" ] && [ -e "$W/done.2" ] || fail "crash: the other ranks were not waited for"

# 4. Timeout: every rank is killed, exit 124, quickly.
start=$(date +%s)
"$T" launch -n 3 --timeout 0.5 -- sh -c '[ "$RANK" = 0 ] || exec sleep 30' 2>"$W/err"
expect_rc "timeout" 124 $?
[ $(($(date +%s) - start)) -le 5 ] || fail "timeout took too long"
expect_grep "timeout" "timeout after 0.5 s; killing ranks 1, 2" "$W/err"

# 5. SIGTERM to the launcher reaches every rank.
"$T" launch -n 2 -- sh -c \
    'trap "touch '"$W"'/term.\$RANK; exit 3" TERM; touch "'"$W"'/up.$RANK"; while :; do sleep 0.05; done' \
    2>"$W/err" &
lpid=$!
i=0
while { [ ! -e "$W/up.0" ] || [ ! -e "$W/up.1" ]; } && [ $i -lt 100 ]; do
    sleep 0.05
    i=$((i + 1))
done
kill -TERM $lpid
wait $lpid
expect_rc "SIGTERM" 3 $?
[ -e "$W/term.0" ] && [ -e "$W/term.1" ] || fail "SIGTERM was not forwarded to every rank"

# 6. The instance directory of a generated name is gone after the job.
"$T" launch -n 2 --timeout 0.3 -- sh -c \
    'd="$TRNEMU_SHM_DIR/trnemu-$TRNEMU_INSTANCE_NAME"; mkdir -p "$d"; touch "$d/f.$RANK"; exec sleep 30' \
    2>/dev/null
[ -z "$(ls "$TRNEMU_SHM_DIR")" ] || { fail "instance directory left behind:"; ls -R "$TRNEMU_SHM_DIR"; }

# 7. Usage errors exit 2.
for args in "-- true" "-n 0 -- true" "-n 2" "-n x -- true" "--bogus -n 2 -- true" \
            "-n 2 --timeout -1 -- true" "-n 2 --cores-per-rank"; do
    # shellcheck disable=SC2086
    "$T" launch $args 2>/dev/null
    expect_rc "usage '$args'" 2 $?
done

if [ $fails -ne 0 ]; then
    echo "$fails failure(s)"
    exit 1
fi
echo "launch: all checks passed"
