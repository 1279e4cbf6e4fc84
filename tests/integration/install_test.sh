#!/bin/sh
# install_test.sh BUILD_DIR PREFIX CLIENT_C [CFLAGS...]: install the build
# into a temporary root (meson install --destdir), check the vendor layout
# under PREFIX (lib/libnrt.so.1, lib/libnrt.so, include/{nrt,ndl,trnemu},
# bin/trnemu and the neuron-ls/-top/-monitor links, lib/pkgconfig/nrt.pc
# and trnemu.pc), then build CLIENT_C with `pkg-config --cflags --libs nrt`
# (and trnemu), and with the vendor's -I/-L line, and run it; run
# neuron-ls from the prefix. Extra arguments go to the compiler (the
# sanitizer flags of a sanitizer build).
set -eu
build=$1 prefix=$2 client=$3
shift 3
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
meson install -C "$build" --no-rebuild --destdir "$root" >"$root/install.log" 2>&1 ||
    { cat "$root/install.log"; exit 1; }
p=$root$prefix

fail() { echo "install_test: $*" >&2; exit 1; }
for f in lib/libnrt.so.1 lib/libnrt.so include/nrt/nrt.h include/nrt/nrt_status.h \
         include/ndl/neuron_driver_shared_tensor_batch_op.h include/trnemu/trnemu.h \
         bin/trnemu lib/pkgconfig/nrt.pc lib/pkgconfig/trnemu.pc; do
    [ -e "$p/$f" ] || fail "missing $prefix/$f"
done
for t in neuron-ls neuron-top neuron-monitor; do
    [ -L "$p/bin/$t" ] || fail "$prefix/bin/$t is not a link"
    [ "$(readlink "$p/bin/$t")" = trnemu ] || fail "$prefix/bin/$t does not point to trnemu"
done

export PKG_CONFIG_PATH="$p/lib/pkgconfig"
flags=$(pkg-config --define-prefix --cflags --libs nrt)
case "$flags" in *"-I$p/include"*"-L$p/lib"*|*"-L$p/lib"*"-I$p/include"*) ;;
    *) fail "pkg-config nrt gives '$flags'" ;; esac
cc -o "$root/client" "$client" "$@" $flags
LD_LIBRARY_PATH="$p/lib" "$root/client" >"$root/client.txt" || fail "client (nrt.pc) failed"
grep -q '^vncs [1-9]' "$root/client.txt" || fail "client (nrt.pc) printed $(cat "$root/client.txt")"
# One version: nrt.pc says what nrt_get_version reports.
nrtv=$(pkg-config --modversion nrt)
grep -qx "nrt $nrtv" "$root/client.txt" ||
    fail "nrt.pc says $nrtv, the runtime: $(grep '^nrt ' "$root/client.txt")"
tflags=$(pkg-config --define-prefix --cflags --libs trnemu)
cc -DWITH_TRNEMU -o "$root/client_t" "$client" "$@" $tflags
LD_LIBRARY_PATH="$p/lib" "$root/client_t" | grep -q '^trnemu ' || fail "client (trnemu.pc) failed"
# The vendor's own build line for its sample application.
cc -o "$root/client_v" "$client" "$@" -I"$p/include" -L"$p/lib" -lnrt
LD_LIBRARY_PATH="$p/lib" "$root/client_v" >/dev/null || fail "client (vendor line) failed"
"$p/bin/neuron-ls" >"$root/ls.txt" || fail "neuron-ls failed"
# neuron-ls's own table (docs/cli.md), and its JSON with -j
grep -q "| NEURON | NEURON |  NEURON  | NEURON |   CONNECTED   |" "$root/ls.txt" || fail "neuron-ls printed: $(cat "$root/ls.txt")"
"$p/bin/neuron-ls" -j | grep -q '"neuron_device": 0' || fail "neuron-ls -j printed no devices"
# The NKI front end: <prefix>/python, found by the installed `trnemu exec`
# (plain builds with a NumPy python3 only: a sanitizer-built library cannot
# be preloaded into an uninstrumented interpreter).
[ -e "$p/python/nki/__init__.py" ] || fail "missing $prefix/python/nki"
[ -e "$p/python/neuronxcc/nki/__init__.py" ] || fail "missing $prefix/python/neuronxcc/nki"
if [ $# -eq 0 ] && /usr/bin/python3 -c 'import numpy' 2>/dev/null; then
    "$p/bin/trnemu" exec -- /usr/bin/python3 -c 'import nki, neuronxcc.nki; print(nki.__file__)' \
        >"$root/py.txt" 2>&1 || fail "trnemu exec python3: $(cat "$root/py.txt")"
    grep -q "^$p/python/nki/" "$root/py.txt" || fail "nki imported from $(cat "$root/py.txt")"
fi
echo "install_test: ok ($prefix)"
