#!/bin/sh
# soak_test.sh SOAK: runs the soak test (soak.c) with TRNEMU_SHM_DIR on a
# 64 MiB tmpfs of its own (a mount namespace made with unshare -rm: no
# privilege needed where user namespaces are allowed), so that its filler
# fills no one else's /dev/shm. Skips (77) with a message where mounts
# are refused.
set -u
prog=$1
. "$(dirname "$0")/../lib/private_tmpfs.sh"
private_tmpfs soak-shm 64m
TRNEMU_SHM_DIR=$dir exec timeout -k 5 80 unshare -rm sh -c \
    "$(tmpfs_mount 64m) && exec '$prog'"
