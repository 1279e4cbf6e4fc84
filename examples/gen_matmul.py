#!/usr/bin/env python3
"""gen_matmul.py: write a trnemu assembly kernel for C = A x B with A [M x K]
and B [K x N] bf16, C [M x N] fp32, all in HBM (docs/asm.md).

Usage: gen_matmul.py [--m M] [--n N] [--k K] [--cores 1|2] [--name NAME] [-o FILE.s]

M and K are multiples of 128, N a multiple of 512 (defaults 4096 each:
the 4096^3 kernel of the examples). Pure Python, deterministic output.

--cores 2 writes an LNC=2 kernel: one subgraph per physical core, core c
computing rows c*M/2 .. (c+1)*M/2 - 1 of C with the program below (M a
multiple of 256). When its stores are done, each core's GpSimd engine
swaps its last output tile with the other core (sendrecv), stores the tile
it received into rows 128*c .. 128*c+127 of a second output X [256 x 512]
fp32, and meets the other core at a core_barrier.

The Tensor engine computes dst[M' x N'] = stationary[K' x M']^T x
moving[K' x N'] with the contraction over at most 128 SBUF partitions, into
one PSUM bank (at most 512 fp32 per partition). The kernel walks C in
blocks of 128 rows x 512 columns ("groups"), column panel by column panel:

  for nt in N/512 column panels:          B panel nt: B[:, 512*nt ...] in SBUF
      for mt in M/128 row blocks:         A^T panel: A[128*mt ..., :]^T in SBUF
          group j = nt * M/128 + mt:
              PSUM bank j % 8 = sum over kt of
                  AT[kt][:, 0:128]^T x Bp[kt][:, 0:512]   (K/128 matmuls)
              Scalar engine: bank -> SBUF tile j % 4
              GpSimd engine: SBUF tile -> C[128*mt ..., 512*nt ...]

The sync engine loads the panels (B panels double-buffered, A^T panels
double-buffered; A^T arrives by a strided DMA). Every buffer that is
reused waits for the engine that last read it:

  sp    A^T panel j     waits mm >= j-1      (group j-2 has no more reads)
  sp    B panel nt      waits bdone >= nt-1  (panel nt-2 has no more reads)
  pe    group j         waits aload >= j+1, bload >= nt+1,
                              evac >= j-7    (bank j%8 read out by ACT)
                        signals mm (and bdone after a panel's last group)
  act   group j         waits mm >= j+1, stored >= j-3 (tile j%4 stored)
                        signals evac
  pool  group j         waits evac >= j+1, signals stored
"""
import argparse
import sys

P = 128          # partitions: the contraction tile and the rows of a group
NB = 512         # fp32 per PSUM bank: the columns of a group
BANKS = 8        # PSUM banks
CTILES = 4       # SBUF output tiles


def emit_core(w, core, cores, m, n, k, lay):
    """The engine streams of one core: C rows core*m/cores ... of C."""
    mt_n, nt_n, kt_n = m // P // cores, n // NB, k // P
    mt0 = core * mt_n
    a_off, b_off, c_off = lay["a"], lay["b"], lay["c"]

    # The sync engine: loads in the order the Tensor engine uses them.
    w("")
    w("; ---- sync engine: panel loads")
    for nt in range(nt_n):
        wait = " wait=bdone>=%d" % (nt - 1) if nt >= 2 else ""
        w("sp.dma_copy dst=sbuf[0:128, %d, [512,%d], [1,512]]:bf16 "
          "src=hbm:B[[%d,128], %d, [%d,%d], [1,512]]:bf16%s signal=bload+=1" %
          (b_off[nt % 2], kt_n, n, nt * NB * 2, P * n, kt_n, wait))
        for mt in range(mt_n):
            j = nt * mt_n + mt
            wait = " wait=mm>=%d" % (j - 1) if j >= 2 else ""
            w("sp.dma_copy dst=sbuf[0:128, %d, [128,%d], [1,128]]:bf16 "
              "src=hbm:A[[1,128], %d, [128,%d], [%d,128]]:bf16%s signal=aload+=1" %
              (a_off[j % 2], kt_n, (mt0 + mt) * P * k * 2, kt_n, k, wait))

    # The Tensor engine: one accumulation group per block of C.
    w("")
    w("; ---- tensor engine: K/128 matmuls per group")
    for nt in range(nt_n):
        for mt in range(mt_n):
            j = nt * mt_n + mt
            bank = (j % BANKS) * NB * 4
            for kt in range(kt_n):
                line = ("pe.nc_matmul dst=psum[0:128, %d, [1,512]]:f32 "
                        "stationary=sbuf[0:128, %d, [1,128]]:bf16 "
                        "moving=sbuf[0:128, %d, [1,512]]:bf16" %
                        (bank, a_off[j % 2] + kt * P * 2, b_off[nt % 2] + kt * NB * 2))
                if kt > 0:
                    line += " accumulate"
                if kt == 0:
                    line += " wait=aload>=%d wait=bload>=%d" % (j + 1, nt + 1)
                    if j >= BANKS:
                        line += " wait=evac>=%d" % (j - BANKS + 1)
                if kt == kt_n - 1:
                    line += " signal=mm+=1"
                    if mt == mt_n - 1:
                        line += " signal=bdone+=1"
                w(line)

    # The Scalar engine: PSUM -> SBUF.
    w("")
    w("; ---- scalar engine: PSUM banks out to SBUF tiles")
    for j in range(nt_n * mt_n):
        line = ("act.tensor_copy dst=sbuf[0:128, %d, [1,512]]:f32 "
                "src=psum[0:128, %d, [1,512]]:f32 wait=mm>=%d" %
                (c_off[j % CTILES], (j % BANKS) * NB * 4, j + 1))
        if j >= CTILES:
            line += " wait=stored>=%d" % (j - CTILES + 1)
        w(line + " signal=evac+=1")

    # The GpSimd engine starts the stores.
    w("")
    w("; ---- gpsimd engine: stores to C")
    for nt in range(nt_n):
        for mt in range(mt_n):
            j = nt * mt_n + mt
            w("pool.dma_copy dst=hbm:C[[%d,128], %d, [1,512]]:f32 "
              "src=sbuf[0:128, %d, [1,512]]:f32 wait=evac>=%d signal=stored+=1" %
              (n, ((mt0 + mt) * P * n + nt * NB) * 4, c_off[j % CTILES], j + 1))
    if cores == 1:
        return
    last = nt_n * mt_n - 1
    other = 1 - core
    w("")
    w("; ---- gpsimd engine: swap the last tile with core %d, store it to X, meet" % other)
    w("pool.sendrecv dst=sbuf[0:128, %d, [1,512]]:f32 src=sbuf[0:128, %d, [1,512]]:f32 "
      "send_to=%d recv_from=%d wait=stored>=%d" % (lay["r"], c_off[last % CTILES], other, other,
                                                   last + 1))
    w("pool.dma_copy dst=hbm:X[[512,128], %d, [1,512]]:f32 src=sbuf[0:128, %d, [1,512]]:f32"
      % (core * P * NB * 4, lay["r"]))
    w("pool.core_barrier data=hbm:X[[1,1], 0, [1,1]]:f32")


def emit_io(w, m, n, k, cores):
    w(".input  A bf16 [%d, %d]" % (m, k))
    w(".input  B bf16 [%d, %d]" % (k, n))
    w(".output C f32 [%d, %d]" % (m, n))
    if cores > 1:
        w(".output X f32 [%d, %d]" % (cores * P, NB))


def generate(m, n, k, name, cores=1):
    kt_n = k // P
    a_bytes = kt_n * P * 2           # A^T panel per partition: kt_n tiles of 128 bf16
    b_bytes = kt_n * NB * 2          # B panel per partition: kt_n tiles of 512 bf16
    a_off = [0, a_bytes]
    b_off = [2 * a_bytes, 2 * a_bytes + b_bytes]
    c_base = 2 * a_bytes + 2 * b_bytes
    c_off = [c_base + i * NB * 4 for i in range(CTILES)]
    r_off = c_base + CTILES * NB * 4
    sbuf_used = r_off + (NB * 4 if cores > 1 else 0)
    if sbuf_used > 192 * 1024:
        raise SystemExit("gen_matmul.py: K=%d needs %d bytes per SBUF partition (at most 196608)"
                         % (k, sbuf_used))
    lay = {"a": a_off, "b": b_off, "c": c_off, "r": r_off}
    out = []
    w = out.append
    w("; %s.s: C = A x B, A [%d x %d] bf16, B [%d x %d] bf16, C [%d x %d] fp32." %
      (name, m, k, k, n, m, n))
    w("; Generated by examples/gen_matmul.py --m %d --n %d --k %d%s; see that script for the" %
      (m, n, k, " --cores %d" % cores if cores > 1 else ""))
    w("; tiling and the semaphore protocol.")
    w(";")
    w("; SBUF bytes per partition: A^T panels at %d and %d (%d each), B panels at %d and %d"
      % (a_off[0], a_off[1], a_bytes, b_off[0], b_off[1]))
    w("; (%d each), output tiles at %s (2048 each)%s: %d in all." %
      (b_bytes, ", ".join(str(c) for c in c_off),
       ", the tile received from the other core at %d" % r_off if cores > 1 else "", sbuf_used))
    w("")
    w(".neff %s" % name)
    w("")
    if cores == 1:
        emit_io(w, m, n, k, cores)
        w("")
    for sem, what in (("aload", "A^T panels landed"), ("bload", "B panels landed"),
                      ("mm", "groups summed in PSUM"), ("bdone", "B panels no longer read"),
                      ("evac", "groups copied out of PSUM"), ("stored", "groups stored to C")):
        w(".sem %-7s ; %s" % (sem, what))
    for core in range(cores):
        if cores > 1:
            w("")
            w(".subgraph")
            w("; ==== physical core %d: rows %d .. %d of C" %
              (core, core * m // cores, (core + 1) * m // cores - 1))
        if cores > 1:
            emit_io(w, m, n, k, cores)
        emit_core(w, core, cores, m, n, k, lay)
    return "\n".join(out) + "\n"


def main(argv):
    ap = argparse.ArgumentParser(description="generate a tiled bf16 matmul kernel")
    ap.add_argument("--m", type=int, default=4096)
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--k", type=int, default=4096)
    ap.add_argument("--cores", type=int, default=1, choices=(1, 2))
    ap.add_argument("--name", default=None)
    ap.add_argument("-o", "--output", default="-")
    args = ap.parse_args(argv[1:])
    if args.m <= 0 or args.k <= 0 or args.n <= 0 or args.m % (P * args.cores) or \
            args.k % P or args.n % NB:
        ap.error("M must be a positive multiple of 128 x cores, K of 128, N of 512")
    name = args.name or "matmul_%dx%dx%d" % (args.m, args.n, args.k)
    text = generate(args.m, args.n, args.k, name, args.cores)
    if args.output == "-":
        sys.stdout.write(text)
    else:
        with open(args.output, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
