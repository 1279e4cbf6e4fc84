#!/bin/sh
# soak_test.sh SOAK: runs the soak test (soak.c) with TRNEMU_SHM_DIR on a
# 64 MiB tmpfs of its own (a mount namespace made with unshare -rm: no
# privilege needed where user namespaces are allowed), so that its filler
# fills no one else's /dev/shm. Skips (77) with a message where mounts
# are refused.
set -u
prog=$1
dir=$(mktemp -d "${TMPDIR:-/tmp}/trnemu-soak-shm.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT INT TERM
chmod 700 "$dir"
if ! unshare -rm sh -c "mount -t tmpfs -o size=64m,mode=700 tmpfs '$dir'" 2>/dev/null; then
    echo "SKIP: cannot mount a tmpfs here (unshare -rm mount refused)"
    exit 77
fi
TRNEMU_SHM_DIR=$dir exec timeout -k 5 80 unshare -rm sh -c \
    "mount -t tmpfs -o size=64m,mode=700 tmpfs '$dir' && exec '$prog'"
