#!/bin/sh
# shm_full_test.sh PROG: runs PROG (test_shm_full.c) on a full
# shared-memory directory: a 8 MiB tmpfs mounted in a mount namespace of
# its own (unshare -rm: no privilege needed where user namespaces are
# allowed), then under a file size limit (ulimit -f). Skips (77) with a
# message where mounts are refused.
set -u
prog=$1
. "$(dirname "$0")/../lib/private_tmpfs.sh"
private_tmpfs shmfull 8m
TRNEMU_SHM_DIR=$dir unshare -rm sh -c \
    "$(tmpfs_mount 8m) && exec '$prog' tmpfs" || exit 1
(ulimit -f 1024 && TRNEMU_SHM_DIR=$dir exec "$prog" fsize) || exit 1
left=$(ls -A "$dir")
if [ -n "$left" ]; then
    echo "FAIL: left behind in $dir: $left"
    exit 1
fi
