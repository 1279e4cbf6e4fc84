# private_tmpfs.sh: sourced by the test scripts that need a shared-memory
# directory of their own. private_tmpfs NAME SIZE makes an empty folder in
# $dir (removed at exit) and checks that a tmpfs of SIZE can be mounted on
# it in a mount namespace of its own (unshare -rm: no privilege needed
# where user namespaces are allowed); where mounts are refused it skips
# the test (77) with a message. The caller mounts it again in the
# namespace its program runs in: tmpfs_mount SIZE prints that command.
private_tmpfs() {
    dir=$(mktemp -d "${TMPDIR:-/tmp}/trnemu-$1.XXXXXX") || exit 1
    trap 'rm -rf "$dir"' EXIT INT TERM
    chmod 700 "$dir"
    if ! unshare -rm sh -c "$(tmpfs_mount "$2")" 2>/dev/null; then
        echo "SKIP: cannot mount a tmpfs here (unshare -rm mount refused)"
        exit 77
    fi
}

tmpfs_mount() {
    echo "mount -t tmpfs -o size=$1,mode=700 tmpfs '$dir'"
}
