#!/bin/sh
# test_coll.sh TRNEMU COLL_RANK CASE [N]: multi-process collectives on an
# emulated trn2.48xlarge, N ranks started by `trnemu launch` (one VNC each),
# every rank checking its own results (coll_rank.c). Cases:
#   host N, neff N   results of the out-of-NEFF / in-NEFF collectives
#   mesh N           the same with the mesh algorithms for every small one
#                    and the chain (not device memory) for every large one
#   kill N           a rank dies in a run of all-reduces (then while the
#                    others wait): every other rank fails with
#                    NRT_EXEC_HW_ERR_COLLECTIVES in time; then a new job on
#                    the same instance works
#   late N           a rank never starts: NRT_TIMEOUT (host, then in-NEFF)
#   mismatch N       ranks disagree on a size: NRT_INVALID everywhere
#   twojobs          two 4-rank jobs on disjoint cores of one instance at once
#   p2p N            nrt_async_sendrecv between rank pairs
#   left N           the other ranks leave: rank 0's nrta_cc_prepare fails
#   direct N         in-NEFF reduce-scatters and all-gathers, and
#                    nrt_all_gather of device tensors, taken directly in
#                    device memory (seen in the NCCL debug lines), then
#                    through the channels: every output the same bytes
set -u
T=$1
R=$2
CASE=$3
N=${4:-4}
. "$(dirname "$0")/mp_env.sh"
mp_env coll trn2.48xlarge
MP_LAUNCH_TIMEOUT=240

case "$CASE" in
host | neff | mismatch | left)
    run "$CASE $N" 0 -n "$N" -- "$R" "$CASE"
    ;;
mesh)
    # small operations by mesh whatever the CPU count: the same results
    # (bit for bit, against the rank-order fold) as the chain gives for large
    TRNEMU_COLL_MESH_RANKS=1024 TRNEMU_COLL_DIRECT_MIN=0x7fffffffffff \
        run "host $N, mesh and chain" 0 -n "$N" -- "$R" host
    TRNEMU_COLL_MESH_RANKS=1024 run "neff $N, mesh" 0 -n "$N" -- "$R" neff
    ;;
p2p)
    run "p2p $N" 0 -n "$N" -- "$R" p2p
    ;;
direct)
    export NEURON_RT_LOG_LEVEL_NCCL=DEBUG
    # parts of 1001 elements (within one 32 KiB block of the fold), and of
    # 9001 (f32: two blocks, the second partial)
    for DIRECT_PART in 1001 9001; do
        export DIRECT_PART
        d="$W/direct-$DIRECT_PART" c="$W/channels-$DIRECT_PART"
        mkdir -p "$d" "$c"
        TRNEMU_COLL_MESH_MAX=0 TRNEMU_COLL_DIRECT_MIN=0 \
            run "direct $N/$DIRECT_PART" 0 -n "$N" -- "$R" direct "$d"
        # 3 reduce-scatters and 4 all-gathers per rank directly; the 5th
        # all-gather's input overlaps its output outside the in-place block
        for k in reduce_scatter:3 all_gather:4; do
            got=$(grep -c "${k%:*} #[0-9]* of [0-9]* bytes done directly" "$W/out")
            [ "$got" -eq $((${k#*:} * N)) ] || {
                fail "direct $N/$DIRECT_PART: $got ${k%:*}s directly, want $((${k#*:} * N))"
                cat "$W/out"
            }
        done
        TRNEMU_COLL_DIRECT_MIN=0x7fffffffffff \
            run "channels $N/$DIRECT_PART" 0 -n "$N" -- "$R" direct "$c"
        ! grep -q "done directly" "$W/out" || fail "channels $N: an operation went directly"
        r=0
        while [ "$r" -lt "$N" ]; do
            cmp "$d/rank-$r.bin" "$c/rank-$r.bin" ||
                fail "direct $N/$DIRECT_PART: rank $r's outputs differ from the channels'"
            r=$((r + 1))
        done
    done
    ;;
late)
    NEURON_RT_EXEC_TIMEOUT=2 run "late $N (host)" 0 -n "$N" -- "$R" late
    NEURON_RT_EXEC_TIMEOUT=2 LATE_NEFF=1 run "late $N (neff)" 0 -n "$N" -- "$R" late
    ;;
kill)
    export TRNEMU_INSTANCE_NAME="coll-kill-$$"
    for mode in loop idle; do
        # the launcher exits 128 + 9 for the killed rank, the only one that fails
        KILL_MODE=$mode run "kill $N ($mode)" 137 -n "$N" -- "$R" kill
        if grep '^trnemu launch: rank [0-9]* (pid' "$W/out" | grep -qv "rank $((N - 1)) (pid"; then
            fail "kill $N ($mode): a survivor failed"
            cat "$W/out"
        fi
    done
    # the instance is still usable by the next job
    run "after kill" 0 -n 2 -- "$R" host
    ;;
twojobs)
    export TRNEMU_INSTANCE_NAME="coll-two-$$"
    NEURON_RT_ROOT_COMM_ID=jobA:1 "$T" launch --timeout 240 -n 4 --first-core 0 -- \
        sh -c "\"$R\" host && \"$R\" neff" >"$W/a" 2>&1 &
    pa=$!
    NEURON_RT_ROOT_COMM_ID=jobB:1 "$T" launch --timeout 240 -n 4 --first-core 8 -- \
        sh -c "\"$R\" host && \"$R\" neff" >"$W/b" 2>&1 &
    pb=$!
    wait $pa || { fail "job A"; cat "$W/a"; }
    wait $pb || { fail "job B"; cat "$W/b"; }
    ;;
*)
    echo "unknown case $CASE"
    exit 2
    ;;
esac
[ "$fails" -eq 0 ] || exit 1
echo "ok: $CASE $N"
