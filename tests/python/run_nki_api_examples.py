"""run_nki_api_examples.py: run the examples of the vendor's NKI API
reference (aws-neuron-sdk, a local checkout or its bare mirror) on trnemu.

    python3 tests/python/run_nki_api_examples.py SDK_DIR [--git-dir] [--rev REV]
        [--python python] [--libnrt build/shims/libnrt.so.1] [--skip-tests]
        [--examples-only] [-k TEXT] [--timeout S] [--report FILE]

Three parts, nothing of the SDK copied into this repository:

(0) The names: every public name the stub modules define (functions,
    classes, constants, and the methods and enum members of classes)
    must be in trnemu's nki and have a row in docs/nki.md's "API status"
    tables (a name in a row's first cell); each one that is absent or has
    no row is listed, and counts as a failure.

(a) The code-block examples of the docstrings of nki/api/nki/**/__init__.py
    (the reference's stub modules: nki, nki.language, nki.isa,
    nki.collectives), also the `::` literal blocks. Each is sorted into

    - pseudo-code: a `text` block, a block that does not parse as Python,
      or one that calls nothing of the NKI API (notation for the
      semantics of an instruction);
    - fragment: it uses names that neither the block nor DEFAULTS below
      defines (the reference leaves them to the surrounding prose), or
      leaves parts out with `...`;
    - runnable: a block that defines kernel functions is executed and each
      kernel is called with the arguments DEFAULTS gives its parameters;
      a kernel function left undecorated is called from a harness kernel
      that copies the tiles it returns to HBM (INSTANCES names the
      examples that need an emulated Trainium3, GRIDS those that need an
      LNC=2 launch); any other block is run unmodified as the body of a harness kernel
      whose parameters are the block's free names (HBM arrays or Python
      values from DEFAULTS). The harness changes one thing: an `assert` on
      a tile (`assert nl.equal(c, expected)`) cannot be decided while
      tracing, so the tile is stored to an extra HBM output and checked to
      be all true after the kernel ran; an assert on a Python value is
      checked as written.

    and reported as ran, failed (with the last error line), fragment or
    pseudo-code. Every example runs in a process of its own under the race
    checker.

(b) The vendor's pytest files under nki/test/, run unmodified against
    trnemu's nki (PYTHONPATH=python, TRNEMU_LIBNRT=...): passed, failed and
    errors, each failure with its cause.

A bare git directory (a mirror) is read with `git archive`
into a temporary folder (--git-dir, or found automatically when SDK_DIR
has no work tree).
"""
import argparse
import ast
import builtins
import json
import os
import re
import shutil
import subprocess
import sys
import symtable
import tempfile
import textwrap

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
API_DIR = os.path.join("nki", "api", "nki")
TEST_DIR = os.path.join("nki", "test")

# The module names an example may use without importing them (the
# reference's prose imports them once per page).
MODULE_NAMES = {"nl": "nki.language", "nisa": "nki.isa", "nki": "nki", "np": "numpy"}
NKI_MODULES = ("nl", "nisa", "nki", "ncc", "nccl")

# Names the examples use without defining them, and what the harness binds
# them to. ("hbm", shape, dtype, fill) is an HBM array argument (fill:
# "normal" random float values, "identity", "index:N" random integers in
# [0, N), "perm:N" distinct integers in [0, N), "const:V"); ("value", v) a
# Python value argument; ("expr", text) a statement `name = text` run at
# the kernel's start (the NKI call the prose names). A key "owner:name"
# applies only to the examples of that docstring.
DEFAULTS = {
    # nl.copy: x.T @ y of two loaded tiles
    "x_tensor": ("hbm", (128, 128), "float32", "normal"),
    "y_tensor": ("hbm", (128, 512), "float32", "normal"),
    # the loop examples: input_tensor.shape[1] // 512 iterations
    "input_tensor": ("hbm", (128, 1024), "float32", "normal"),
    "out_tensor": ("hbm", (128, 1024), "float32", "const:0"),
    # gather_flattened: indices into each partition's 512 elements
    "gather_flattened:data_tensor": ("hbm", (128, 512), "float32", "normal"),
    "gather_flattened:indices_tensor": ("hbm", (128, 512), "uint32", "index:512"),
    "actual_tensor": ("hbm", (128, 512), "float32", "const:0"),
    # shared_identity_matrix compares with the identity it is given
    "shared_identity_matrix:actual_tensor": ("hbm", (128, 128), "float32", "const:0"),
    "expected_tensor": ("hbm", (128, 128), "float32", "identity"),
    # fori_loop / while_loop: a (1, N) row, a loop bound and a counter
    "N": ("value", 8),
    "ub_input": ("hbm", (1, 1), "int32", "const:5"),
    "fori_loop:data": ("hbm", (1, 8), "float32", "normal"),
    "fori_loop:output": ("hbm", (1, 8), "float32", "const:0"),
    "while_loop:data": ("hbm", (1, 1), "float32", "const:1.5"),
    "count_input": ("hbm", (1, 1), "int32", "const:3"),
    # __getitem__: the start of a dynamic slice
    "i": ("value", 16),
    # ap: the scalar offset of an indirect access pattern (a one-element
    # SBUF tile, the type the signature gives)
    "idx": ("expr", "nl.zeros((1, 1), dtype=nl.int32, buffer=nl.sbuf)"),
    # core_barrier / sendrecv: sizes and the calls the prose names
    "batch_size": ("value", 64),
    "hidden_dim": ("value", 128),
    "core_id": ("expr", "nl.program_id(0)"),
    "core_barrier": ("expr", "nisa.core_barrier"),
    "sendrecv": ("expr", "nisa.sendrecv"),
    # kernel parameters of the examples that define kernels
    "lhsT": ("hbm", (512, 128), "float32", "normal"),
    "rhs": ("hbm", (512, 512), "float32", "normal"),
    "indirect_gather_kernel:data": ("hbm", (256, 64), "float32", "normal"),
    "indirect_gather_kernel:indices": ("hbm", (128, 1), "uint32", "index:256"),
    "indirect_scatter_kernel:src_data": ("hbm", (128, 64), "float32", "normal"),
    "indirect_scatter_kernel:indices": ("hbm", (128, 1), "uint32", "perm:256"),
    "indirect_scatter_kernel:output": ("hbm", (256, 64), "float32", "const:0"),
    "gather_transpose_kernel:src_hbm": ("hbm", (256, 128), "float32", "normal"),
    "gather_transpose_kernel:idx_hbm": ("hbm", (128, 1), "int32", "index:256"),
    "gather_transpose_2d_kernel:src_hbm": ("hbm", (512, 128), "float32", "normal"),
    "gather_transpose_2d_kernel:idx_hbm": ("hbm", (128, 2), "int32", "index:512"),
    "gather_transpose_4d_kernel:src_hbm": ("hbm", (256, 2, 2, 4), "float32", "normal"),
    "gather_transpose_4d_kernel:idx_hbm": ("hbm", (128, 1), "int32", "index:256"),
    "data_tensor": ("hbm", (128, 512), "float32", "normal"),
    "in_tensor": ("hbm", (128, 64), "float32", "index:3"),
    "topk_kernel:in_tensor": ("hbm", (128, 3), "bfloat16", "normal"),
}

# Examples that need a launch grid: the docstring owner and the grid
# (an LNC=2 core's two programs).
GRIDS = {"core_barrier": "nc2", "sendrecv": "nc2"}

# Examples of instructions the reference says exist only on NeuronCore-v4
# and newer run on an emulated Trainium3.
INSTANCES = {"activate2": "trn3.48xlarge"}


# What is known about the examples and tests that still fail (docs/nki.md,
# "Tests and benchmark"): printed beside the failure, not hiding it.
KNOWN = {
    "test_activation": "expects a bfloat16 activation to equal the float32 result; "
                       "trnemu rounds the output to bfloat16 as the hardware does",
}


def known(name):
    """'  [known: why]' for a failing example owner or test name, else ''."""
    why = KNOWN.get(name.split("::")[-1].split("[")[0])
    return "  [known: %s]" % why if why else ""


# ---------------------------------------------------------------- extraction

class Example:
    """One code block of a docstring: where it is and its text."""

    def __init__(self, file, line, owner, lang, code):
        self.file = file        # path relative to the SDK root
        self.line = line        # file line of the block's first code line
        self.owner = owner      # the documented name (Class.method or function)
        self.lang = lang        # the block's language ('' for none, 'literal' for ::)
        self.code = code        # the block's text, dedented
        self.kind = None        # pseudo-code, fragment or runnable (classify)
        self.why = ""           # the reason for the kind
        self.free = []          # names the block uses without defining

    def where(self):
        return "%s:%d (%s)" % (self.file, self.line, self.owner)

    def to_json(self):
        return {k: getattr(self, k) for k in ("file", "line", "owner", "lang", "code", "free")}


_DIRECTIVE = re.compile(r"^(\s*)\.\. code-block::\s*(\S*)\s*$")
_LITERAL = re.compile(r"^(\s*)(?!\.\.)\S.*::\s*$")


def _indent(s):
    return len(s) - len(s.lstrip())


def _block_body(lines, start, ind):
    """(first body line index, body lines) of the block whose directive is
    at lines[start] with indentation ind: its option lines skipped, up to
    the first non-blank line indented no deeper than ind."""
    j = start + 1
    while j < len(lines) and lines[j].strip().startswith(":") and _indent(lines[j]) > ind:
        j += 1
    end = j
    while end < len(lines) and (not lines[end].strip() or _indent(lines[end]) > ind):
        end += 1
    body = lines[j:end]
    while body and not body[0].strip():
        body.pop(0)
        j += 1
    while body and not body[-1].strip():
        body.pop()
    return j, body, end


def blocks_in_docstring(doc):
    """[(line index in doc, language, dedented code)] of the code-block
    directives and `::` literal blocks of one docstring."""
    lines = doc.splitlines()
    out = []
    i = 0
    while i < len(lines):
        m = _DIRECTIVE.match(lines[i])
        lit = None if m else _LITERAL.match(lines[i])
        if not m and not lit:
            i += 1
            continue
        first, body, end = _block_body(lines, i, _indent(lines[i]))
        if body and (m or _indent(body[0]) > _indent(lines[i])):
            out.append((first, m.group(2) if m else "literal", textwrap.dedent("\n".join(body))))
        i = max(end, i + 1)
    return out


def _docstring_nodes(tree, prefix=""):
    """(qualified owner name, docstring Constant node) of every module,
    class and function docstring under tree."""
    body = getattr(tree, "body", [])
    if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None),
                                                            ast.Constant) \
            and isinstance(body[0].value.value, str):
        yield prefix or "<module>", body[0].value
    for node in body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            yield from _docstring_nodes(node, (prefix + "." if prefix else "") + node.name)


def examples_in_source(text, file):
    """Every code example of the docstrings of one Python source file."""
    tree = ast.parse(text)
    out = []
    for owner, node in _docstring_nodes(tree):
        for k, lang, code in blocks_in_docstring(node.value):
            out.append(Example(file, node.lineno + k, owner, lang, code))
    return out


def api_files(sdk):
    """The reference's stub modules, nki/api/nki/**/__init__.py."""
    base = os.path.join(sdk, API_DIR)
    for d, dirs, files in os.walk(base):
        dirs.sort()
        if "__init__.py" in files:
            yield os.path.relpath(os.path.join(d, "__init__.py"), sdk)


def api_names(sdk):
    """Every function, method and class name the stub modules define."""
    names = set()
    for f in api_files(sdk):
        for node in ast.walk(ast.parse(open(os.path.join(sdk, f), encoding="utf-8").read())):
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and not node.name.startswith("_"):
                names.add(node.name)
    return names


def stub_names(source):
    """(name, members) for every public name a stub module defines at its
    top level (functions, classes, constants, annotated constants); members:
    a class's public methods and assigned attributes (enum members)."""
    out = []
    for node in ast.parse(source).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names = [node.name]
        elif isinstance(node, ast.Assign):
            names = [t.id for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names = [node.target.id]
        else:
            continue
        members = []
        for b in node.body if isinstance(node, ast.ClassDef) else ():
            if isinstance(b, ast.FunctionDef):
                members.append(b.name)
            elif isinstance(b, ast.Assign):
                members += [t.id for t in b.targets if isinstance(t, ast.Name)]
        out += [(n, [m for m in members if not m.startswith("_")]) for n in names
                if not n.startswith("_")]
    return out


def stub_module(path):
    """The module a stub file stands for: nki/api/nki/isa/__init__.py is
    nki.isa."""
    rel = os.path.relpath(os.path.dirname(path), os.path.dirname(API_DIR))
    return rel.replace(os.sep, ".")


def api_rows(doc):
    """Every identifier in the first cell of a table row of docs/nki.md's
    "API status" section: the names that have a row."""
    start = doc.find("## API status")
    end = doc.find("\n## ", start + 1)
    names = set()
    for line in doc[start:end if end > 0 else None].splitlines():
        if line.startswith("| "):
            for code in re.findall(r"`([^`]*)`", line.split("|")[1]):
                names.update(re.findall(r"[A-Za-z_]\w*", code))
    return names


def absent_names(want):
    """In a child with trnemu's nki: the names of want ([module, name,
    members]) that trnemu lacks, as module.name[.member]."""
    import importlib
    missing = []
    for mod, name, members in want:
        m = importlib.import_module(mod)
        if not hasattr(m, name):
            missing.append("%s.%s" % (mod, name))
            continue
        obj = getattr(m, name)
        missing += ["%s.%s.%s" % (mod, name, a) for a in members if not hasattr(obj, a)]
    return missing


def check_names(sdk, args, out):
    """Every public name of the reference's stubs: is it in trnemu's nki,
    and has it a row in docs/nki.md's API tables? The count of those
    that are not."""
    want = []
    for f in api_files(sdk):
        want += [(stub_module(f), n, mem) for n, mem in
                 stub_names(open(os.path.join(sdk, f), encoding="utf-8").read())]
    r = subprocess.run([sys.executable, os.path.abspath(__file__), "--names"],
                       input=json.dumps(want), env=child_env(args, "names"), capture_output=True,
                       text=True, timeout=args.timeout)
    if r.returncode != 0:
        out("names: the check failed: %s" % last_error(r.stderr + r.stdout, r.returncode))
        return 1
    absent = json.loads(r.stdout.strip().splitlines()[-1])   # the child's last line
    with open(os.path.join(ROOT, "docs", "nki.md"), encoding="utf-8") as f:
        rows = api_rows(f.read())
    no_row = ["%s.%s" % (mod, n) for mod, n, _ in want if n not in rows]
    for name in absent:
        out("absent      %s" % name)
    for name in no_row:
        out("no row      %s (docs/nki.md)" % name)
    out("names: %d of the reference (%d class members), %d absent, %d without a row in docs/nki.md"
        % (len(want), sum(len(m) for _, _, m in want), len(absent), len(no_row)))
    return len(absent) + len(no_row)


# ------------------------------------------------------------- classification

def free_names(code):
    """Names the code reads but neither defines nor imports (nor are
    builtins), in order of first use, nested functions included."""
    wrapped = "def __example__():\n" + textwrap.indent(code, "    ") + "\n    pass\n"
    top = symtable.symtable(wrapped, "<example>", "exec")
    seen = []

    def walk(t):
        for s in t.get_symbols():
            n = s.get_name()
            if s.is_referenced() and s.is_global() and not hasattr(builtins, n) and n not in seen:
                seen.append(n)
        for c in t.get_children():
            walk(c)
    walk(top.get_children()[0])
    order = {}
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Name) and node.id in seen:
            key = (node.lineno, node.col_offset)
            order[node.id] = min(order.get(node.id, key), key)
    return sorted(seen, key=lambda n: order.get(n, (0, 0)))


def _calls_api(tree, names):
    """Does the code use an NKI module or call a method the stubs define
    (on anything but NumPy)?"""
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in NKI_MODULES:
            return True
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            mods = [a.name for a in node.names] + [getattr(node, "module", None) or ""]
            if any(m.split(".")[0] == "nki" for m in mods):
                return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in names \
                and not (isinstance(node.func.value, ast.Name) and node.func.value.id in ("np", "numpy")):
            return True
    return False


def _elides(tree):
    """Does the code leave parts out with `...` (as a statement or an
    argument; `t[..., 0]` is an index, not an elision)?"""
    in_index = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript):
            in_index.update(id(n) for n in ast.walk(node.slice))
    return any(isinstance(n, ast.Constant) and n.value is Ellipsis and id(n) not in in_index
               for n in ast.walk(tree))


def default_for(owner, name):
    """The DEFAULTS entry for a name in the examples of owner, or None."""
    short = owner.split(".")[-1]
    return DEFAULTS.get(short + ":" + name) or DEFAULTS.get(name)


def kernel_defs(tree):
    """The top-level functions of a block that are kernels (decorated, or
    named *kernel) with their parameter names."""
    out = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and (node.decorator_list or node.name.endswith("kernel")):
            out.append((node.name, [a.arg for a in node.args.args]))
    return out


def classify(ex, names):
    """Set ex.kind, ex.why and ex.free."""
    if ex.lang not in ("python", "py", "python3", "", "literal"):
        ex.kind, ex.why = "pseudo-code", "a %s block" % ex.lang
        return ex
    try:
        tree = ast.parse(ex.code)
    except SyntaxError as e:
        ex.kind, ex.why = "pseudo-code", "not Python (%s, line %d)" % (e.msg, e.lineno or 0)
        return ex
    if not _calls_api(tree, names):
        ex.kind, ex.why = "pseudo-code", "calls nothing of the NKI API"
        return ex
    free = [n for n in free_names(ex.code) if n not in MODULE_NAMES]
    ex.free = free
    if _elides(tree):
        ex.kind, ex.why = "fragment", "parts elided with `...`"
        return ex
    missing = [n for n in free if default_for(ex.owner, n) is None]
    for k, params in kernel_defs(tree):
        missing += [p for p in params if default_for(k, p) is None and p not in missing]
    if missing:
        ex.kind, ex.why = "fragment", "uses " + ", ".join(missing)
    else:
        ex.kind = "runnable"
    return ex


# ---------------------------------------------------------------- the harness

def host_array(spec, rng):
    """The NumPy array of an ("hbm", shape, dtype, fill) entry."""
    import numpy as np
    import nki.language as nl
    _, shape, dtype, fill = spec
    n = int(np.prod(shape))
    if fill == "normal":
        a = rng.standard_normal(shape).astype(np.float32)
    elif fill == "identity":
        a = np.eye(shape[0], shape[1], dtype=np.float32)
    elif fill.startswith("index:"):
        a = rng.integers(0, int(fill[6:]), size=shape)
    elif fill.startswith("perm:"):
        a = rng.permutation(int(fill[5:]))[:n].reshape(shape)
    else:
        a = np.full(shape, float(fill[6:]))
    if dtype == "bfloat16":
        return np.asarray(a, dtype=np.float32).astype(nl.bfloat16)
    return a.astype(getattr(np, dtype))


class _AssertToCheck(ast.NodeTransformer):
    """assert E  ->  __check__(E, file line): a tile's truth is read after
    the run (nested functions keep their asserts)."""

    def __init__(self, first_line):
        self.first_line = first_line   # file line of the code's line 1

    def visit_FunctionDef(self, node):
        return node

    def visit_Assert(self, node):
        call = ast.Call(func=ast.Name("__check__", ast.Load()),
                        args=[node.test, ast.Constant(node.lineno + self.first_line - 1)], keywords=[])
        return ast.copy_location(ast.Expr(call), node)


def harness_kernel(ex, params, prologue, glb):
    """The example's code as the body of a kernel function with the given
    parameters (file and line numbers those of the SDK file)."""
    tree = ast.parse(ex.code)
    tree = _AssertToCheck(ex.line).visit(tree)
    pro = ast.parse("\n".join("%s = %s" % kv for kv in prologue)).body
    ret = ast.parse("return __checks__()").body
    fn = ast.FunctionDef(name="example_kernel",
                         args=ast.arguments(posonlyargs=[], args=[ast.arg(p) for p in params],
                                            vararg=None, kwonlyargs=[], kw_defaults=[],
                                            kwarg=None, defaults=[]),
                         body=pro + tree.body + ret, decorator_list=[], returns=None)
    mod = ast.Module(body=[fn], type_ignores=[])
    ast.fix_missing_locations(mod)
    ast.increment_lineno(mod, ex.line - 1)
    exec(compile(mod, ex.file, "exec"), glb)
    return glb["example_kernel"]


def _grid_call(kernel, owner):
    import nki.language as nl
    if GRIDS.get(owner.split(".")[-1]) == "nc2":
        return kernel[nl.spmd_dim(nl.nc(2))]
    return kernel


def run_statements(ex, rng):
    """Run a statement block inside a harness kernel; raise on failure."""
    import numpy as np
    import nki
    from nki._core import NkiTensor
    import nki.language as nl
    checks = []

    def check(value, line):
        if isinstance(value, NkiTensor):
            out = nl.ndarray(value.shape, dtype=value.dtype, buffer=nl.shared_hbm)
            nl.store(out, value)
            checks.append((out, line))
        elif not value:
            raise AssertionError("%s:%d: assertion false" % (ex.file, line))

    def results():
        return tuple(o for o, _ in checks) if checks else None

    glb = {"__check__": check, "__checks__": results, "__name__": "example"}
    for short, mod in MODULE_NAMES.items():
        glb[short] = __import__(mod, fromlist=["_"])
    params, args, prologue = [], {}, []
    for n in ex.free:
        spec = default_for(ex.owner, n)
        if spec[0] == "expr":
            prologue.append((n, spec[1]))
        else:
            params.append(n)
            args[n] = host_array(spec, rng) if spec[0] == "hbm" else spec[1]
    kernel = nki.jit(harness_kernel(ex, params, prologue, glb))
    got = _grid_call(kernel, ex.owner)(**args)
    lines = [line for _, line in checks]
    outs = got if isinstance(got, tuple) else ([] if got is None else [got])
    for a, line in zip(outs, lines):
        if not np.all(np.asarray(a, dtype=np.float32) != 0):
            raise AssertionError("%s:%d: assertion false on the device (%d of %d elements)"
                                 % (ex.file, line, int(np.sum(np.asarray(a, dtype=np.float32) == 0)),
                                    np.asarray(a).size))


def _to_hbm(fn):
    """A function the reference leaves undecorated, as a kernel: what it
    returns on chip (SBUF/PSUM tiles) is copied to HBM outputs, as a
    caller of the function would."""
    import functools
    import nki.isa as nisa
    import nki.language as nl

    @functools.wraps(fn)
    def kernel(*args, **kwargs):
        r = fn(*args, **kwargs)
        outs = []
        for t in (r if isinstance(r, (tuple, list)) else [r]):
            if t is not None and not nl.is_hbm(t):
                o = nl.ndarray(t.shape, dtype=t.dtype, buffer=nl.shared_hbm)
                nisa.dma_copy(dst=o, src=t)
                t = o
            outs.append(t)
        return tuple(outs) if isinstance(r, (tuple, list)) else outs[0]
    return kernel


def run_kernels(ex, rng):
    """Execute a block that defines kernels and call each one."""
    import nki
    glb = {"__name__": "example"}
    for short, mod in MODULE_NAMES.items():
        glb[short] = __import__(mod, fromlist=["_"])
    tree = ast.parse(ex.code)
    ast.increment_lineno(tree, ex.line - 1)
    exec(compile(tree, ex.file, "exec"), glb)
    for name, params in kernel_defs(ast.parse(ex.code)):
        fn = glb[name]
        kernel = fn if type(fn).__name__ != "function" else nki.jit(_to_hbm(fn))
        args = {}
        for p in params:
            spec = default_for(name, p)
            args[p] = host_array(spec, rng) if spec[0] == "hbm" else spec[1]
        kernel(**args)


def run_one(spec):
    """Child process: run one example (JSON on stdin); exit 0 when it ran."""
    import numpy as np
    ex = Example(spec["file"], spec["line"], spec["owner"], spec["lang"], spec["code"])
    ex.free = spec["free"]
    rng = np.random.default_rng(0)
    if kernel_defs(ast.parse(ex.code)):
        run_kernels(ex, rng)
    else:
        run_statements(ex, rng)


# ------------------------------------------------------------------- drivers

def child_env(args, part):
    """The children's environment: trnemu's nki and libnrt, the race
    checker on, and an emulated machine of their own (per part)."""
    env = dict(os.environ)
    env["TRNEMU_INSTANCE_NAME"] = "nki-api-%s-%d" % (part, os.getpid())
    env["PYTHONPATH"] = os.pathsep.join([os.path.abspath(args.python)] +
                                        ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env["TRNEMU_LIBNRT"] = os.path.abspath(args.libnrt)
    env.setdefault("TRNEMU_RACECHECK", "1")
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def last_error(text, rc):
    lines = [l.strip() for l in text.strip().splitlines() if l.strip()]
    return lines[-1][:200] if lines else "exit %d" % rc


def run_examples(sdk, args, out):
    names = api_names(sdk)
    exs = []
    for f in api_files(sdk):
        exs += examples_in_source(open(os.path.join(sdk, f), encoding="utf-8").read(), f)
    counts = {"ran": 0, "failed": 0, "fragment": 0, "pseudo-code": 0}
    env = child_env(args, "examples")
    for ex in exs:
        classify(ex, names)
        if args.k and args.k not in ex.where():
            continue
        if ex.kind != "runnable":
            counts[ex.kind] += 1
            out("%-11s %s  %s" % (ex.kind, ex.where(), ex.why))
            continue
        inst = INSTANCES.get(ex.owner.split(".")[-1])
        try:
            r = subprocess.run([sys.executable, os.path.abspath(__file__), "--one"],
                               input=json.dumps(ex.to_json()), cwd=sdk,
                               env=dict(env, TRNEMU_INSTANCE=inst,
                                                 TRNEMU_INSTANCE_NAME=env["TRNEMU_INSTANCE_NAME"] + "-" + inst)
                               if inst else env,
                               capture_output=True, text=True, timeout=args.timeout)
            ok, why = r.returncode == 0, last_error(r.stderr + r.stdout, r.returncode)
        except subprocess.TimeoutExpired:
            ok, why = False, "timeout after %ds" % args.timeout
        counts["ran" if ok else "failed"] += 1
        out("%-11s %s%s" % ("ran" if ok else "FAILED", ex.where(),
                            "" if ok else "  " + why + known(ex.owner)))
    out("examples: %d ran, %d failed, %d fragments, %d pseudo-code (of %d code blocks)"
        % (counts["ran"], counts["failed"], counts["fragment"], counts["pseudo-code"], len(exs)))
    return counts


def run_vendor_tests(sdk, args, out):
    """The vendor's nki/test pytest files against trnemu's nki."""
    env = child_env(args, "tests")
    env["COLUMNS"] = "400"     # room for each failure's message in pytest's summary
    cmd = [sys.executable, "-m", "pytest", "-rA", "-q", "-p", "no:cacheprovider", "--tb=line",
           "-o", "python_files=test_*.py", TEST_DIR]
    try:
        r = subprocess.run(cmd, env=env, cwd=sdk, capture_output=True, text=True,
                           timeout=args.timeout * 20)
        text = r.stdout + r.stderr
    except subprocess.TimeoutExpired as e:
        text = (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        out("vendor tests: timeout")
    counts = {}
    for line in text.splitlines():
        m = re.match(r"^(PASSED|FAILED|ERROR|XPASS|XFAIL|SKIPPED) (\S+)(?: - (.*))?", line)
        if m:
            counts[m.group(1)] = counts.get(m.group(1), 0) + 1
            if m.group(1) in ("FAILED", "ERROR"):
                out("%-6s %s  %s%s" % (m.group(1), m.group(2), (m.group(3) or "")[:200],
                                       known(m.group(2))))
    summary = [l for l in text.splitlines() if re.search(r"\d+ (passed|failed)", l)]
    out("vendor tests: " + ", ".join("%d %s" % (v, k.lower()) for k, v in sorted(counts.items()))
        + ("  [%s]" % summary[-1].strip("= ") if summary else ""))
    return counts


def sdk_tree(args):
    """(folder with nki/, commit or '', temporary folder to remove or None)."""
    git_dir = args.sdk if args.git_dir else None
    if git_dir is None and not os.path.isdir(os.path.join(args.sdk, "nki")) \
            and os.path.isfile(os.path.join(args.sdk, "HEAD")):
        git_dir = args.sdk
    if git_dir is None:
        rev = subprocess.run(["git", "-C", args.sdk, "rev-parse", "HEAD"], capture_output=True,
                             text=True).stdout.strip()
        return args.sdk, rev, None
    tmp = tempfile.mkdtemp(prefix="nki-api-examples-")
    rev = subprocess.run(["git", "--git-dir", git_dir, "rev-parse", args.rev], check=True,
                         capture_output=True, text=True).stdout.strip()
    arch = subprocess.run(["git", "--git-dir", git_dir, "archive", rev, "nki"], check=True,
                          capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", tmp], input=arch, check=True)
    return tmp, rev, tmp


def main(argv=None):
    if argv is None and sys.argv[1:2] == ["--one"]:
        run_one(json.loads(sys.stdin.read()))
        return 0
    if argv is None and sys.argv[1:2] == ["--names"]:
        print(json.dumps(absent_names(json.loads(sys.stdin.read()))))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("sdk", help="aws-neuron-sdk checkout, or a bare git dir")
    ap.add_argument("--git-dir", action="store_true", help="SDK is a (bare) git directory")
    ap.add_argument("--rev", default="HEAD", help="the revision read from a git directory")
    ap.add_argument("--python", default=os.path.join(ROOT, "python"), help="trnemu's nki package folder")
    ap.add_argument("--libnrt", default=os.path.join(ROOT, "build", "shims", "libnrt.so.1"))
    ap.add_argument("--timeout", type=int, default=120, help="seconds per example")
    ap.add_argument("-k", default="", help="only examples whose FILE:LINE (OWNER) contains this")
    ap.add_argument("--skip-tests", action="store_true", help="only the docstring examples")
    ap.add_argument("--tests-only", action="store_true", help="only the nki/test files")
    ap.add_argument("--report", help="also write the report to this file")
    args = ap.parse_args(argv)
    sdk, rev, tmp = sdk_tree(args)
    rep = open(args.report, "w") if args.report else None

    def out(line):
        print(line, flush=True)
        if rep:
            rep.write(line + "\n")
    out("aws-neuron-sdk %s" % (rev or "(not a git checkout)"))
    try:
        bad = 0 if args.k else check_names(sdk, args, out)
        if not args.tests_only:
            bad += run_examples(sdk, args, out)["failed"]
        if not args.skip_tests and not args.k:
            c = run_vendor_tests(sdk, args, out)
            bad += c.get("FAILED", 0) + c.get("ERROR", 0)
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
        if rep:
            rep.close()
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
