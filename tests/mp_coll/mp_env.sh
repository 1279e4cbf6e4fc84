# mp_env.sh: sourced by the multi-process test scripts of this directory:
# their environment, and the failure count and one-launch check they share.
# mp_env NAME INSTANCE: a private work directory $W (removed at exit) with
# its own shared-memory directory, the emulated instance, no inherited
# core or rendezvous settings, and an execution timeout (60 s unless set).
mp_env() {
    W=$(mktemp -d "${TMPDIR:-/tmp}/trnemu-$1-test.XXXXXX")
    trap 'rm -rf "$W"' EXIT
    export TRNEMU_SHM_DIR="$W/shm"
    mkdir -p "$TRNEMU_SHM_DIR"
    export TRNEMU_INSTANCE="$2"
    unset NEURON_LOGICAL_NC_CONFIG NEURON_RT_NUM_CORES NEURON_RT_ROOT_COMM_ID \
        TRNEMU_INSTANCE_NAME
    export NEURON_RT_EXEC_TIMEOUT=${NEURON_RT_EXEC_TIMEOUT:-60}
}

fails=0

# fail WHAT...: count and print one failure
fail() {
    echo "FAIL: $*"
    fails=$((fails + 1))
}

# run WHAT WANT_RC LAUNCH_ARGS...: one `$T launch` (T: the trnemu tool),
# its output in $W/out, its exit status checked; the launch gives up after
# MP_LAUNCH_TIMEOUT seconds (240 unless set)
run() {
    what=$1
    want=$2
    shift 2
    "$T" launch --timeout "${MP_LAUNCH_TIMEOUT:-240}" "$@" >"$W/out" 2>&1
    rc=$?
    if [ "$rc" -ne "$want" ]; then
        fail "$what: exit status $rc, want $want"
        cat "$W/out"
    fi
}
