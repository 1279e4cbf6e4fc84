#!/bin/sh
# shm_full_test.sh PROG: runs PROG (test_shm_full.c) on a full
# shared-memory directory: a 8 MiB tmpfs mounted in a mount namespace of
# its own (unshare -rm: no privilege needed where user namespaces are
# allowed), then under a file size limit (ulimit -f). Skips (77) with a
# message where mounts are refused.
set -u
prog=$1
dir=$(mktemp -d "${TMPDIR:-/tmp}/trnemu-shmfull.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT INT TERM
chmod 700 "$dir"
if ! unshare -rm sh -c "mount -t tmpfs -o size=8m,mode=700 tmpfs '$dir'" 2>/dev/null; then
    echo "SKIP: cannot mount a tmpfs here (unshare -rm mount refused)"
    exit 77
fi
TRNEMU_SHM_DIR=$dir unshare -rm sh -c \
    "mount -t tmpfs -o size=8m,mode=700 tmpfs '$dir' && exec '$prog' tmpfs" || exit 1
(ulimit -f 1024 && TRNEMU_SHM_DIR=$dir exec "$prog" fsize) || exit 1
left=$(ls -A "$dir")
if [ -n "$left" ]; then
    echo "FAIL: left behind in $dir: $left"
    exit 1
fi
