#!/bin/sh
# test_collv.sh TRNEMU COLLV_RANK CASE N [NEFF]: the variable-count collectives
# (all_to_all_v, all_gather_v) between N ranks started by `trnemu launch`
# (one VNC each) on an emulated trn3pd98.48xlarge, every rank checking its
# own results against a reference it computes (collv_rank.c). Cases:
#   host N   trnemu_all_to_all_v / trnemu_all_gather_v, then disagreeing sizes
#   neff N   the in-NEFF instructions, then a count too large for its slot
#   example 4 NEFF   the same on examples/moe_a2av.s
set -u
T=$1
R=$2
CASE=$3
N=${4:-4}
NEFF=${5:-}
. "$(dirname "$0")/mp_env.sh"
mp_env collv trn3pd98.48xlarge
"$T" launch --timeout 240 -n "$N" -- "$R" "$CASE" $NEFF >"$W/out" 2>&1
rc=$?
if [ "$rc" -ne 0 ]; then
    echo "FAIL: $CASE $N: exit status $rc"
    cat "$W/out"
    exit 1
fi
# the disagreement is named once per rank, by the rank that saw it
want=$N
got=$(grep -c 'sends .* elements to rank\|has room for\|expects' "$W/out")
if [ "$got" -ne "$want" ]; then
    echo "FAIL: $CASE $N: $got log lines name the disagreement, want $want (one per rank)"
    cat "$W/out"
    exit 1
fi
echo "ok: $CASE $N"
