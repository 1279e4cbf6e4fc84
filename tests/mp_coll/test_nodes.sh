#!/bin/sh
# test_nodes.sh TRNEMU COLL_RANK DP_TRAIN MLP_NEFF CASE: a job spread over
# several emulated nodes on this host (docs/nodes.md), each node its own
# instance, joined over libfabric's tcp provider on loopback. Cases:
#   results  2 nodes x 2 ranks (out-of-NEFF) and 4 nodes x 1 rank (in-NEFF,
#            an UltraServer's ring): every rank checks its results bit for
#            bit against the rank-order fold, as on one host
#   dp       the data-parallel example as 2 nodes x 1 rank prints the same
#            losses and weight hash as 2 ranks on one host
#   faults   a killed node, a node that never arrives, a wrong job token, a
#            wrong bootstrap address: every rank fails in time, nothing is
#            left in the shared-memory directory
#   flood    2 nodes x 1 rank while a neighbour holds 1,000 silent
#            connections to the bootstrap endpoint and another sends a
#            byte a second (boot_flood.py): the job completes bit for bit,
#            the dropped strangers are a few rate-limited lines; a rank
#            whose connection rank 0 dropped connects again (boot_fake_root.py)
#   netns    two nodes in two network namespaces joined by a veth pair
#            (skipped, saying why, where namespaces cannot be made)
set -u
T=$1
R=$2
DP=$3
NEFF=$4
CASE=$5
. "$(dirname "$0")/mp_env.sh"
mp_env nodes trn2.48xlarge
unset TRNEMU_JOB_TOKEN TRNEMU_NODES TRNEMU_NODE SLURM_NNODES SLURM_NODEID GROUP_RANK NODE_RANK \
    LOCAL_WORLD_SIZE
export TRNEMU_NODE_DEAD_MS=3000
MP_LAUNCH_TIMEOUT=120

# expect WHAT PATTERN: the last output names the cause
expect() {
    grep -q "$2" "$W/out" || { fail "$1: no line matching '$2'"; cat "$W/out"; }
}

left_behind() {
    [ -z "$(ls "$TRNEMU_SHM_DIR")" ] || { fail "$1: left behind:"; ls -R "$TRNEMU_SHM_DIR"; }
}

free_port() {
    /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

case "$CASE" in
results)
    run "host, 2 nodes x 2 ranks" 0 --nodes 2 -n 2 -- "$R" host
    run "neff, 4 nodes x 1 rank" 0 --nodes 4 -n 1 -- "$R" neff
    left_behind results
    ;;
dp)
    run "dp_train, one host" 0 -n 2 -- "$DP" --neff "$NEFF" --steps 5
    grep -E '^(step|weights)' "$W/out" >"$W/one"
    run "dp_train, 2 nodes" 0 --nodes 2 -n 1 -- "$DP" --neff "$NEFF" --steps 5
    grep -E '^(step|weights)' "$W/out" >"$W/two"
    [ -s "$W/one" ] || fail "dp_train printed no losses"
    cmp -s "$W/one" "$W/two" || { fail "dp_train: 2 nodes differ from one host"; diff "$W/one" "$W/two"; }
    left_behind dp
    ;;
faults)
    # a node dies while the other waits in an all-reduce: the survivor
    # names the dead node (coll_rank checks NRT_EXEC_HW_ERR_COLLECTIVES in time)
    KILL_MODE=idle run "killed node" 137 --nodes 2 -n 1 -- "$R" kill
    expect "killed node" "node 1.*\(has not been heard\|cannot be reached\)"
    # node 1 never starts its rank: NRT_TIMEOUT naming it
    NEURON_RT_EXEC_TIMEOUT=3 run "never-arriving node" 0 --nodes 2 -n 1 -- "$R" late
    expect "never-arriving node" "rank(s) 1 did not reach the bootstrap"
    # node 1 has another job's token: rank 0 rejects it, both fail in time
    port=$(free_port)
    export NEURON_RT_ROOT_COMM_ID=127.0.0.1:$port NEURON_RT_EXEC_TIMEOUT=8
    TRNEMU_JOB_TOKEN=tokenAAAA1 TRNEMU_INSTANCE_NAME=tokA "$T" launch --timeout 60 --nodes 2 --node 0 \
        -n 1 -- "$R" host >"$W/a" 2>&1 &
    pa=$!
    TRNEMU_JOB_TOKEN=tokenBBBB2 TRNEMU_INSTANCE_NAME=tokB "$T" launch --timeout 60 --nodes 2 --node 1 \
        -n 1 -- "$R" host >"$W/b" 2>&1
    rb=$?
    wait $pa
    ra=$?
    cat "$W/a" "$W/b" >"$W/out"
    [ $ra -ne 0 ] && [ $rb -ne 0 ] && [ $ra -ne 124 ] && [ $rb -ne 124 ] ||
        fail "bad token: exit statuses $ra and $rb, want failures before the launcher's timeout"
    expect "bad token" "rejected a connection from .*wrong job token"
    # nobody listens at the bootstrap address: NRT_TIMEOUT naming it
    port=$(free_port)
    NEURON_RT_EXEC_TIMEOUT=2 NEURON_RT_ROOT_COMM_ID=127.0.0.1:$port TRNEMU_JOB_TOKEN=tokenCCCC3 run "wrong address" 1 \
        --nodes 2 --node 1 -n 1 -- "$R" host
    expect "wrong address" "could not be reached in time"
    left_behind faults
    ;;
flood)
    # 1,000 silent connections and a slow sender at rank 0's bootstrap
    # endpoint: the job of 2 nodes still completes, bit for bit
    port=$(free_port)
    export NEURON_RT_ROOT_COMM_ID=127.0.0.1:$port TRNEMU_JOB_TOKEN=floodtoken1
    /usr/bin/python3 "$(dirname "$0")/boot_flood.py" 127.0.0.1 "$port" 60 >"$W/flood" 2>&1 &
    pf=$!
    sleep 1
    TRNEMU_INSTANCE_NAME=floodA "$T" launch --timeout 60 --nodes 2 --node 0 -n 1 -- "$R" host \
        >"$W/a" 2>&1 &
    pa=$!
    TRNEMU_INSTANCE_NAME=floodB "$T" launch --timeout 60 --nodes 2 --node 1 -n 1 -- "$R" host \
        >"$W/b" 2>&1
    rb=$?
    wait $pa
    ra=$?
    kill $pf 2>/dev/null
    wait $pf 2>/dev/null
    [ $ra -eq 0 ] && [ $rb -eq 0 ] || { fail "flood: exit statuses $ra and $rb"; cat "$W/a" "$W/b"; }
    cat "$W/flood"
    dropped=$(grep -c "dropped a connection" "$W/a")
    echo "flood: $dropped lines about dropped connections at rank 0"
    [ "$dropped" -ge 1 ] && [ "$dropped" -le 40 ] ||
        fail "flood: $dropped lines about dropped connections, want 1..40 (rate-limited)"
    # a rank whose connection rank 0 dropped connects again (boot_fake_root.py
    # drops the first and refuses the second with a cause the rank must show)
    port=$(free_port)
    /usr/bin/python3 "$(dirname "$0")/boot_fake_root.py" "$port" >"$W/root" 2>&1 &
    pr=$!
    sleep 0.5
    NEURON_RT_ROOT_COMM_ID=127.0.0.1:$port TRNEMU_JOB_TOKEN=retrytoken1 NEURON_RT_EXEC_TIMEOUT=20 \
        run "dropped rank" 1 --nodes 2 --node 1 -n 1 -- "$R" host
    wait $pr
    expect "dropped rank" "bootstrap failed at rank 0: fake root: second connection"
    grep -q "2 connections" "$W/root" || { fail "dropped rank: did not connect again"; cat "$W/root"; }
    left_behind flood
    ;;
netns)
    a=trnemu-a-$$ b=trnemu-b-$$
    if ! ip netns add "$a" 2>"$W/err"; then
        echo "SKIP: network namespaces cannot be made here ($(cat "$W/err")); nodes in namespaces not tested"
        exit 77
    fi
    ip netns add "$b"
    cleanup() { ip netns del "$a" 2>/dev/null; ip netns del "$b" 2>/dev/null; rm -rf "$W"; }
    trap cleanup EXIT
    ip link add "va$$" type veth peer name "vb$$" &&
        ip link set "va$$" netns "$a" && ip link set "vb$$" netns "$b" &&
        ip -n "$a" addr add 10.231.0.1/24 dev "va$$" && ip -n "$b" addr add 10.231.0.2/24 dev "vb$$" &&
        ip -n "$a" link set "va$$" up && ip -n "$b" link set "vb$$" up &&
        ip -n "$a" link set lo up && ip -n "$b" link set lo up || {
        echo "SKIP: no veth pair between the namespaces"
        exit 77
    }
    export NEURON_RT_ROOT_COMM_ID=10.231.0.1:29500 TRNEMU_JOB_TOKEN=nsjobtoken1
    ip netns exec "$a" "$T" launch --timeout 60 --nodes 2 --node 0 -n 1 -- "$R" host >"$W/a" 2>&1 &
    pa=$!
    ip netns exec "$b" "$T" launch --timeout 60 --nodes 2 --node 1 -n 1 -- "$R" host >"$W/b" 2>&1
    rb=$?
    wait $pa
    ra=$?
    [ $ra -eq 0 ] && [ $rb -eq 0 ] || { fail "netns: exit statuses $ra and $rb"; cat "$W/a" "$W/b"; }
    left_behind netns
    ;;
*)
    echo "unknown case $CASE"
    exit 2
    ;;
esac
[ "$fails" -eq 0 ] || exit 1
echo "ok: $CASE"
