#!/bin/sh
# Installs the Debian packages trnemu needs to build, test and benchmark.
# Runs apt-get only when something is missing, and only as root; otherwise it
# names what is missing and stops.
set -eu

PKGS="build-essential meson ninja-build pkg-config
libcmocka-dev libarchive-dev zlib1g-dev libjansson-dev libssl-dev libxxhash-dev
liblz4-dev libsqlite3-dev libffi-dev libopenblas-dev
clang libclang-rt-14-dev python3 python3-dev python3-numpy python3-pytest binutils tmux
libfabric-dev libfabric-bin iproute2"

missing=""
for p in $PKGS; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
        missing="$missing $p"
    fi
done

[ -z "$missing" ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
    echo "setup: missing Debian packages:$missing" >&2
    echo "setup: run 'make setup' as root, or install them with apt-get" >&2
    exit 1
fi

echo "setup: installing$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
