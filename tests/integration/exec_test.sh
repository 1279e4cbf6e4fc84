#!/bin/sh
# exec_test.sh TRNEMU PROG LIBNRT: PROG is linked against the fake vendor
# libnrt.so.1 (whose nrt_init always fails). Run directly it must fail;
# run as `TRNEMU exec -- PROG` it must succeed on trnemu's libnrt.so.1
# (found next to the tool, or named by TRNEMU_LIBNRT, here LIBNRT).
set -u
trnemu=$(realpath "$1")
prog=$(realpath "$2")
libnrt=$(realpath "$3")
out=$(mktemp)
trap 'rm -f "$out"' EXIT

unset TRNEMU_INSTANCE NEURON_LOGICAL_NC_CONFIG NEURON_RT_VISIBLE_CORES NEURON_RT_NUM_CORES \
      TRNEMU_LIBNRT LD_PRELOAD LD_LIBRARY_PATH

if "$prog" >"$out" 2>&1; then
    echo "FAIL: $prog succeeded on the fake vendor library:"; cat "$out"; exit 1
fi
grep -q "nrt_init failed" "$out" || { echo "FAIL: unexpected direct run:"; cat "$out"; exit 1; }
echo "direct run failed as expected: $(cat "$out")"

if ! "$trnemu" exec -- "$prog" >"$out" 2>&1; then
    echo "FAIL: trnemu exec -- $prog:"; cat "$out"; exit 1
fi
grep -q "exec_prog: ok on" "$out" || { echo "FAIL: unexpected output:"; cat "$out"; exit 1; }
echo "under trnemu exec: $(cat "$out")"

# The machine configuration passes through to the program.
if ! NEURON_RT_VISIBLE_CORES=3-5 "$trnemu" exec "$prog" >"$out" 2>&1 ||
   ! grep -q "(3 VNCs visible)" "$out"; then
    echo "FAIL: NEURON_RT_VISIBLE_CORES did not reach the program:"; cat "$out"; exit 1
fi
# TRNEMU_LIBNRT names the library, also relative to the working directory.
if ! (cd "$(dirname "$libnrt")" && TRNEMU_LIBNRT=$(basename "$libnrt") \
        "$trnemu" exec -- "$prog") >"$out" 2>&1 || ! grep -q "exec_prog: ok on" "$out"; then
    echo "FAIL: relative TRNEMU_LIBNRT:"; cat "$out"; exit 1
fi
TRNEMU_LIBNRT=/nonexistent/libnrt.so.1 "$trnemu" exec -- "$prog" >"$out" 2>&1
[ $? -eq 1 ] || { echo "FAIL: a missing TRNEMU_LIBNRT was not reported"; cat "$out"; exit 1; }
# No command is a usage error; a missing program is reported.
"$trnemu" exec -- >"$out" 2>&1
[ $? -eq 2 ] || { echo "FAIL: 'trnemu exec --' without a command"; cat "$out"; exit 1; }
"$trnemu" exec -- /nonexistent/program >"$out" 2>&1
[ $? -eq 127 ] || { echo "FAIL: missing program not reported"; cat "$out"; exit 1; }
echo PASS
