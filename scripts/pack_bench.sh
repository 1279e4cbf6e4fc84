#!/bin/sh
# pack_bench.sh: packs a build's benchmarks into one folder that runs on
# another x86-64 Linux host without installing anything (docs/bench.md,
# "Measuring on a many-core host").
#
#   scripts/pack_bench.sh [BUILD_DIR] [OUT_DIR]    (defaults: build, trnemu-bench)
#
# The folder holds bin/ (every bench-* program of the build), lib/ (every
# shared library those programs and libnrt.so.1 need as `ldd` lists them,
# beyond the C library itself: glibc's own libraries and the dynamic
# loader stay the host's, as every x86-64 Linux has them), examples/ (the
# NEFFs the benchmarks execute), numpy_kernels.py (bench-kernels' NumPy
# baseline; skipped when the host has no NumPy) and run.sh. `OUT_DIR/run.sh`
# runs the scaling benchmarks and writes every figure, with the host (CPU
# model, cores, load average before each benchmark) and the OpenBLAS kernel
# beside it, to OUT_DIR/results-HOST-DATE.txt. A tarball of the folder
# (OUT_DIR.tar.gz) is written beside it.
set -eu

build=${1:-build}
out=${2:-trnemu-bench}
src=$(cd "$(dirname "$0")/.." && pwd)

[ -d "$build/bench" ] || { echo "pack_bench: no $build/bench: build first (make build)" >&2; exit 1; }
rm -rf "$out"
mkdir -p "$out/bin" "$out/lib" "$out/examples"

# The C library: what the other host provides (glibc's libraries, the loader, vdso).
is_libc() {
    case "$(basename "$1")" in
    libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|libresolv.so.*|ld-linux*|linux-vdso*|libutil.so.*) return 0 ;;
    esac
    return 1
}

# Copy every library `ldd FILE` resolves, the C library excepted (the real file, not a link).
copy_libs() {
    ldd "$1" | awk '/=> \// { print $3 } /^[[:space:]]*\/.* \(0x/ { print $1 }' | while read -r lib; do
        is_libc "$lib" && continue
        [ -e "$out/lib/$(basename "$lib")" ] && continue
        cp -L "$lib" "$out/lib/$(basename "$lib")"
    done
}

for b in "$build"/bench/bench-*; do
    [ -f "$b" ] && [ -x "$b" ] || continue
    cp "$b" "$out/bin/"
    copy_libs "$b"
done
for l in "$build"/shims/libnrt.so.1 "$build"/shims/libnrt.so; do
    [ -e "$l" ] && cp -L "$l" "$out/lib/$(basename "$l")" && copy_libs "$l"
done
cp "$build"/examples/*.neff "$out/examples/"
cp "$src/bench/numpy_kernels.py" "$out/"
(cd "$src" && git rev-parse HEAD 2>/dev/null || echo unknown) > "$out/COMMIT"
# The newest glibc symbol version the programs and libraries ask for: the
# other host's C library must be at least that.
objdump -T "$out"/bin/* "$out"/lib/* 2>/dev/null | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1 \
    > "$out/GLIBC_NEEDED"

cat > "$out/run.sh" <<'RUN'
#!/bin/sh
# run.sh: runs trnemu's scaling benchmarks from this folder (made by
# scripts/pack_bench.sh) and records each figure with the host beside it.
#   ./run.sh                  bench-matmul, bench-kernels, bench-par, bench-coll scale
#   ./run.sh NAME [ARGS...]   one benchmark (bench-coll one 16 64, ...)
# Results: results-HOST-DATE.txt here (also on stdout).
set -u
here=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH="$here/lib"
export PATH="$PATH:/usr/bin:/bin"
export TRNEMU_INSTANCE_NAME="trnemu-bench-$$"
# Virtual CPUs that hide their model make OpenBLAS pick a generic kernel
# (4-5x slower); on AVX-512 hosts name the AVX-512 one unless told otherwise.
if [ -z "${OPENBLAS_CORETYPE:-}" ] && grep -q ' avx512f' /proc/cpuinfo; then
    export OPENBLAS_CORETYPE=SKYLAKEX
fi
host=$(hostname 2>/dev/null || echo host)
res="$here/results-$host-$(date -u +%Y%m%dT%H%M%SZ).txt"

hostline() {
    model=$(lscpu 2>/dev/null | sed -n 's/^Model name:[[:space:]]*//p' | head -1)
    [ -n "$model" ] || model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
    echo "## host: $model; $(nproc) online CPUs; load $(cut -d' ' -f1-3 /proc/loadavg);" \
         "OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-unset}; $(date -u +%Y-%m-%dT%H:%M:%SZ);" \
         "trnemu $(cat "$here/COMMIT")"
}

# The C library stays the host's: say so plainly when it is too old.
need=$(cut -d_ -f2 "$here/GLIBC_NEEDED")
have=$(getconf GNU_LIBC_VERSION 2>/dev/null | cut -d' ' -f2)
if [ -n "$need" ] && [ -n "$have" ] &&
   [ "$(printf '%s\n%s\n' "$need" "$have" | sort -V | head -1)" != "$need" ]; then
    echo "run.sh: this host's glibc $have is older than the $need the pack needs" >&2
    exit 1
fi

one() {
    name=$1; shift
    { hostline; echo "## $name $*"; } | tee -a "$res"
    case $name in
    bench-kernels) set -- "$here/examples" "$here/numpy_kernels.py" ;;
    bench-par|bench-record) set -- "$here/examples" "$@" ;;
    bench-store) set -- "${TMPDIR:-/tmp}" "$@" ;;
    esac
    "$here/bin/$name" "$@" 2>&1 | tee -a "$res"
    { echo "## after: load $(cut -d' ' -f1-3 /proc/loadavg)"; echo; } | tee -a "$res"
}

{ echo "# trnemu benchmarks (glibc $have, the pack needs $need)"; lscpu 2>/dev/null | grep -E '^(Model name|CPU\(s\)|Thread|Core|Socket|NUMA node\(s\)|Flags)' | cut -c1-200; echo; } > "$res"
if [ $# -gt 0 ]; then
    one "$@"
else
    one bench-matmul
    one bench-kernels
    one bench-par
    one bench-coll scale 64
fi
echo "results in $res"
RUN
chmod +x "$out/run.sh"
tar -czf "$out.tar.gz" -C "$(dirname "$out")" "$(basename "$out")"
echo "packed $(ls "$out/bin" | wc -l) benchmarks, $(ls "$out/lib" | wc -l) libraries into $out ($out.tar.gz)"
