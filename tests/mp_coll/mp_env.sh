# mp_env.sh: sourced by the multi-process test scripts of this directory.
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
