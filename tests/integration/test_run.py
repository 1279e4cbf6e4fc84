#!/usr/bin/env python3
"""test_run.py TRNEMU EXAMPLES_DIR: `trnemu run` end to end on the examples.

add.neff with one .npy and one raw .bin input, --repeat and --vnc, outputs
read back from NAME.npy and compared exactly; softmax.neff rows sum to 1;
wrong inputs (shape, dtype, size, unknown name) fail with a message and
exit status 1; a usage error exits 2. Standard library only (the .npy files
are written and read here by hand).
"""
import ast
import re
import math
import os
import struct
import subprocess
import sys
import tempfile

TRNEMU, EXAMPLES = sys.argv[1], sys.argv[2]


def npy_write(path, descr, shape, payload):
    hdr = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (
        descr, ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else ""))
    hdr += " " * ((64 - (10 + len(hdr) + 1) % 64) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode() + payload)


def npy_read(path):
    b = open(path, "rb").read()
    assert b[:6] == b"\x93NUMPY", path
    n = struct.unpack("<H", b[8:10])[0]
    h = ast.literal_eval(b[10:10 + n].decode())
    return h["descr"], tuple(h["shape"]), b[10 + n:]


def run(*args, want=0):
    p = subprocess.run([TRNEMU, "run", *args], capture_output=True, text=True)
    if p.returncode != want:
        sys.exit("trnemu run %s: exit %d, want %d\n%s%s" % (" ".join(args), p.returncode, want,
                                                           p.stdout, p.stderr))
    return p


def check(cond, what):
    if not cond:
        sys.exit("FAIL: " + what)


def test_add(tmp):
    n = 128 * 512
    a = [float(i % 1000) for i in range(n)]
    npy_write(os.path.join(tmp, "a.npy"), "<f4", (128, 512), struct.pack("<%df" % n, *a))
    with open(os.path.join(tmp, "b.bin"), "wb") as f:
        f.write(struct.pack("<%df" % n, *([0.25] * n)))
    out = os.path.join(tmp, "out")
    p = run(os.path.join(EXAMPLES, "add.neff"), "--input", "a=" + os.path.join(tmp, "a.npy"),
            "--input", "b=" + os.path.join(tmp, "b.bin"), "--output-dir", out, "--repeat", "3",
            "--vnc", "1")
    check("status: Success (0)" in p.stdout, "status line: " + p.stdout)
    check(re.search(r"^executions: 3, first: [0-9.]+ ms, the other 2: median [0-9.]+ ms, "
                    r"best [0-9.]+ ms$", p.stdout, re.M) is not None, "time line: " + p.stdout)
    descr, shape, data = npy_read(os.path.join(out, "c.npy"))
    check(descr == "<f4" and shape == (128, 512), "c.npy header %s %s" % (descr, shape))
    c = struct.unpack("<%df" % n, data)
    check(all(c[i] == a[i] + 0.25 for i in range(n)), "c = a + b")


def test_softmax(tmp):
    # softmax.s: x f32 [128, 1024] -> y, each row sums to 1
    n = 128 * 1024
    x = [math.sin(i) * 3 for i in range(n)]
    npy_write(os.path.join(tmp, "x.npy"), "<f4", (128, 1024), struct.pack("<%df" % n, *x))
    out = os.path.join(tmp, "sm")
    run(os.path.join(EXAMPLES, "softmax.neff"), "--input", "x=" + os.path.join(tmp, "x.npy"),
        "--output-dir", out)
    names = os.listdir(out)
    check(len(names) == 1, "one output: %s" % names)
    descr, shape, data = npy_read(os.path.join(out, names[0]))
    y = struct.unpack("<%df" % n, data)
    for r in range(128):
        s = sum(y[r * 1024:(r + 1) * 1024])
        check(abs(s - 1.0) < 1e-3, "row %d sums to %f" % (r, s))


def test_bad_inputs(tmp):
    add = os.path.join(EXAMPLES, "add.neff")
    npy_write(os.path.join(tmp, "small.npy"), "<f4", (4,), bytes(16))
    npy_write(os.path.join(tmp, "i32.npy"), "<i4", (128, 512), bytes(128 * 512 * 4))
    with open(os.path.join(tmp, "short.bin"), "wb") as f:
        f.write(bytes(100))
    cases = [("a=" + os.path.join(tmp, "small.npy"),
              "holds descr <f4 shape [4]; input 'a' needs descr <f4 shape [128, 512]"),
             ("a=" + os.path.join(tmp, "i32.npy"),
              "holds descr <i4 shape [128, 512]; input 'a' needs descr <f4"),
             ("a=" + os.path.join(tmp, "short.bin"), "100 bytes, input 'a' takes 262144"),
             ("nope=" + os.path.join(tmp, "short.bin"),
              "the model has no input 'nope'; its inputs: a b"),
             ("a=" + os.path.join(tmp, "missing.npy"), "cannot read")]
    for arg, msg in cases:
        p = run(add, "--input", arg, "--output-dir", os.path.join(tmp, "bad"), want=1)
        check(msg in p.stderr, "%s: want '%s' in: %s" % (arg, msg, p.stderr))
    p = run(add, "--repeat", "0", want=2)
    p = run(add, "--input", "a", want=2)
    p = run(os.path.join(tmp, "short.bin"), want=1)
    check("short.bin is not a NEFF" in p.stderr, "not a NEFF: " + p.stderr)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        test_add(tmp)
        test_softmax(tmp)
        test_bad_inputs(tmp)
    print("ok")


if __name__ == "__main__":
    main()
