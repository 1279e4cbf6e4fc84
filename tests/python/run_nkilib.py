"""run_nkilib.py: run the test suite of a local copy of aws-neuron/nki-library
(the NKI Library) in its CPU simulation mode, with trnemu standing in for
the vendor's simulator package, and report what passes and why the rest
fails.

    /usr/bin/python3 tests/python/run_nkilib.py /path/to/nki-library [-m fast] [-k EXPR]
        [--paths test/integration/nkilib/core/cumsum ...] [--workers 2] [--timeout 600]
        [--mem-gib 6] [--racecheck] [--twice] [--run-all] [--report /tmp/nkilib-report.txt]

The suite runs unmodified (`pytest test/integration --test-mode simulation`)
on a copy of the checkout in a temporary directory (the checkout is never
written). trnemu's python/ folder is put on the path, so the suite's
`nki_cpu_simulator`, `nki` and `neuron_dtypes` imports are trnemu's.
What is not trnemu's business is handled here:

- the suite's own dependencies come from Debian (the apt-get line is
  printed when one is missing); nkilib_standins/ holds do-nothing stand-ins
  for the reporting and remote-host modules Debian does not package;
- upstream defects and limits are worked around: the Orchestrator's
  missing _compiled_kernel attribute (nkilib_plugin.py); its simulation
  path, which runs a kernel once in one process with one dict of inputs
  where a collectives test gives inputs and goldens per rank (the plugin
  runs such a test on its N ranks with nki.cpu_simulate(kernel)[lnc].ranks()
  and puts each rank's outputs where the suite's validation looks for
  them, output_worker_<r>/); and a source file that
  does not parse because a docstring's lines were pasted twice after its
  closing quotes (core/mlp/mlp.py at d2ad3a5): the copy drops the pasted
  block (patch_duplicated_docstrings); a test file that uses a name it
  never imports (core/qkv/test_qkv_tkg.py: `Platforms`) gets the import
  (MISSING_IMPORTS);
- each test process gets a data-size limit (RLIMIT_DATA, --mem-gib; not
  RLIMIT_AS, which trnemu's sparse HBM mappings would exhaust), at most 2
  pytest-xdist workers, and a per-test timeout.

--racecheck runs the suite with TRNEMU_RACECHECK=1 (a race between two
engines of a core, or between the two cores of an LNC=2 kernel, fails its
test); --twice runs every kernel twice with the same inputs and fails a
test whose two runs differ in any bit ("not deterministic"); --run-all
sets the suite's own NKILIB_SIMULATION_RUN_ALL=1, which turns off its
skips of shapes it marks slow for simulation (every transformer_tkg test
among them).

The report: a table per kernel family (collected, passed, failed,
skipped, trace-only: tests of the vendor compiler's front end, counted
apart; and the pass rate of the tests that ran), every failure grouped by cause (missing name X, trace error,
execution error, wrong number, test error, timeout, memory limit), and the
names of trnemu's nki that the suite's sources use and trnemu lacks,
ranked by the number of collected tests whose files use them (directly or
through the library modules they import). Nothing of the library is kept
in this repository; CI cannot fetch it, so this is run by hand and its
figures are recorded in docs/nki.md.
"""
import argparse
import ast
import collections
import importlib
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
STANDINS = os.path.join(HERE, "nkilib_standins")
TRNEMU_PY = os.path.join(REPO, "python")

# module the suite imports -> the Debian 12 package that provides it
DEBIAN_PACKAGES = {
    "numpy": "python3-numpy", "pytest": "python3-pytest", "torch": "python3-torch",
    "pandas": "python3-pandas", "scipy": "python3-scipy", "filelock": "python3-filelock",
    "allpairspy": "python3-allpairspy", "paramiko": "python3-paramiko", "boto3": "python3-boto3",
    "botocore": "python3-botocore", "fabric": "python3-fabric", "yaml": "python3-yaml",
    "pytest_timeout": "python3-pytest-timeout", "xdist": "python3-pytest-xdist",
    "typing_extensions": "python3-typing-extensions", "attr": "python3-attr",
}
NKI_ROOTS = ("nki", "nki_cpu_simulator")


# ---------------------------------------------------------------- set-up

def missing_packages():
    """Debian packages whose modules this Python cannot import."""
    missing = []
    for mod, pkg in DEBIAN_PACKAGES.items():
        try:
            importlib.import_module(mod)
        except ImportError:
            missing.append(pkg)
    return missing


def patch_duplicated_docstrings(path):
    """Drop a block pasted after a docstring's closing quotes when it makes
    the file unparsable (an unexpected indent right after a line that is
    only the closing quotes, up to and including the pasted block's own
    closing quotes). Returns True when the file was patched."""
    text = open(path, encoding="utf-8").read()
    try:
        ast.parse(text)
        return False
    except IndentationError as e:
        err_line = e.lineno
    except SyntaxError:
        return False
    lines = text.split("\n")
    close = err_line - 2                  # 0-based index of the line before the error
    while close >= 0 and not lines[close].strip():
        close -= 1
    if close < 0 or lines[close].strip() not in ('"""', "'''"):
        return False
    quote = lines[close].strip()
    end = next((i for i in range(err_line - 1, len(lines)) if lines[i].strip() == quote), None)
    if end is None:
        return False
    patched = "\n".join(lines[:close + 1] + lines[end + 1:])
    try:
        ast.parse(patched)
    except SyntaxError:
        return False
    open(path, "w", encoding="utf-8").write(patched)
    return True


# test files that use a name they never import (a NameError when pytest
# imports them): path in the copy -> (module that defines it, name)
MISSING_IMPORTS = {
    "test/integration/nkilib/core/qkv/test_qkv_tkg.py": ("test.utils.common_dataclasses", "Platforms"),
}


def binds(tree, name):
    """Whether a module's top level imports or defines name."""
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            if any((a.asname or a.name.split(".")[0]) == name for a in node.names):
                return True
        elif isinstance(node, (ast.ClassDef, ast.FunctionDef)) and node.name == name:
            return True
        elif isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return True
    return False


def patch_missing_import(path, module, name):
    """Add `from module import name` before a file's first import when the
    file does not bind name. Returns True when the file was patched."""
    text = open(path, encoding="utf-8").read()
    tree = ast.parse(text)
    if binds(tree, name):
        return False
    first = next((n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))), None)
    lines = text.split("\n")
    at = first.lineno - 1 if first else 0
    lines.insert(at, "from %s import %s  # added by run_nkilib.py (missing upstream)" % (module, name))
    open(path, "w", encoding="utf-8").write("\n".join(lines))
    return True


# files of the suite the public repository lacks: path in the copy -> stand-in
SUITE_FILES = {
    "test/utils/scripts/__init__.py": None,
    "test/utils/scripts/remote_lock_scripts.py": "suite_files/remote_lock_scripts.py",
    "test/utils/perf_analysis_private.py": "suite_files/perf_analysis_private.py",
}


def add_missing_files(dest):
    """Put the stand-ins of SUITE_FILES where the copy lacks them."""
    added = []
    for rel, src in SUITE_FILES.items():
        path = os.path.join(dest, rel)
        if os.path.exists(path):
            continue
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if src is None:
            open(path, "w").write('"""Added by run_nkilib.py (missing upstream)."""\n')
        else:
            shutil.copyfile(os.path.join(STANDINS, src), path)
        added.append(rel)
    return added


def copy_checkout(root, dest):
    """The library copied to dest (sources only), with unparsable files
    patched and missing files added; returns the changed paths (relative)."""
    shutil.copytree(root, dest, ignore=shutil.ignore_patterns(".git", "__pycache__", "*.pyc",
                                                               ".venv", "neuron_test_output"))
    patched = [rel + " (added)" for rel in add_missing_files(dest)]
    for rel, (module, name) in MISSING_IMPORTS.items():
        path = os.path.join(dest, rel)
        if os.path.exists(path) and patch_missing_import(path, module, name):
            patched.append(rel + " (import of %s added)" % name)
    for d, _, files in os.walk(dest):
        for f in files:
            if f.endswith(".py") and patch_duplicated_docstrings(os.path.join(d, f)):
                patched.append(os.path.relpath(os.path.join(d, f), dest) + " (patched)")
    return patched


# the suite's --platform-target values -> the instance type trnemu emulates for it
PLATFORM_INSTANCES = {"trn1": "trn1.32xlarge", "trn2": "trn2.48xlarge", "trn3": "trn3.48xlarge",
                      "trn3_a0": "trn3.48xlarge"}


def limit_memory(gib):
    """A preexec function that caps a process's data size at gib GiB."""
    def apply():
        n = int(gib * (1 << 30))
        resource.setrlimit(resource.RLIMIT_DATA, (n, n))
    return apply


def suite_env(copy, results, libnrt, python_dir, opts=None):
    """The suite's environment; opts: the runner's parsed options (timeout,
    run_all, mem_gib, racecheck, twice, done: the resumed tests' id list,
    only: the list of the only tests to run, platform),
    None for none of them."""
    timeout, run_all, mem_gib, racecheck, twice, done, only, platform = (
        getattr(opts, name, None)
        for name in ("timeout", "run_all", "mem_gib", "racecheck", "twice", "done", "only",
                     "platform"))
    env = dict(os.environ)
    if platform in PLATFORM_INSTANCES:
        # the emulated machine of the suite's platform (its simulator
        # target, NKI_NC_VERSION, must match it); a TRNEMU_INSTANCE of
        # the caller's stays
        env.setdefault("TRNEMU_INSTANCE", PLATFORM_INSTANCES[platform])
    if timeout:
        # a collectives test's job of ranks gets the runner's per-test
        # bound, not the front end's 600 s default (a slow test is a timeout)
        env.setdefault("TRNEMU_NKI_RANKS_TIMEOUT", str(timeout))
    if run_all:
        env[RUN_ALL_KNOB] = "1"           # the suite's own switch: no slow-for-simulation skips
    if mem_gib:
        # the attention-block tests skip themselves when their own estimate
        # of their tensors exceeds this (default 20 GiB): the runner's limit
        env.setdefault(MEMORY_KNOB, "%g" % mem_gib)
    if racecheck:
        env["TRNEMU_RACECHECK"] = "1"     # races between engines and cores fail the run
    if twice:
        env["TRNEMU_NKILIB_TWICE"] = "1"  # each kernel twice, same bits (determinism.py)
    if done:
        env["NKILIB_DONE"] = done         # a resumed run's tests that have an outcome
    if only:
        env["NKILIB_ONLY"] = only         # the tests a retry runs
    env["PYTHONPATH"] = os.pathsep.join([STANDINS, python_dir, os.path.join(copy, "src"), copy]
                                        + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env["NKILIB_RESULTS"] = results
    env["TRNEMU_INSTANCE_NAME"] = "nkilib-%d" % os.getpid()
    env.setdefault("OMP_NUM_THREADS", "1")
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    # the ml_dtypes stand-in is trnemu's host dtypes: nki must not take it
    # for the real ml_dtypes
    env["TRNEMU_NKI_HOST_DTYPES"] = "trnemu"
    if libnrt:
        env["TRNEMU_LIBNRT"] = libnrt
    return env


def pytest_command(args, copy, mode, collect_only=False):
    cmd = [sys.executable, "-m", "pytest"] + (args.paths or ["test/integration"])
    cmd += ["--test-mode", mode, "--platform-target", args.platform,
            "--output-directory", os.path.join(copy, "neuron_test_output"),
            "-p", "nkilib_plugin", "-p", "no:cacheprovider", "-q", "--tb=short",
            "-o", "addopts=", "--disable-no-tests-failure", "--continue-on-collection-errors"]
    if not getattr(args, "keep_artifacts", False):
        # the suite's own option for small disks: each test's kernel
        # arguments and outputs (tens of GB over a long run) go when it ends
        cmd += ["--force-local-cleanup"]
    if args.marker:
        cmd += ["-m", args.marker]
    if args.k:
        cmd += ["-k", args.k]
    if collect_only:
        return cmd + ["--collect-only"]
    cmd += ["--timeout", str(args.timeout)]
    if args.workers > 1:
        # a worker that dies fails its test and is replaced; xdist's default
        # (4 per worker) would end the session, leaving the rest unrun
        cmd += ["-n", str(args.workers), "--max-worker-restart", str(MAX_WORKER_DEATHS)]
    return cmd


def run_suite(args, copy, mode, results, collect_only=False, log_name=None):
    """Run pytest in the copy; returns (exit status, its output)."""
    cmd = pytest_command(args, copy, mode, collect_only)
    os.makedirs(os.path.join(copy, "neuron_test_output"), exist_ok=True)   # the suite expects it
    env = suite_env(copy, results, args.libnrt, args.python, args)
    with open(os.path.join(copy, "pytest-%s.log" % (log_name or mode)), "w") as log:
        r = subprocess.run(cmd, cwd=copy, env=env, stdout=log, stderr=subprocess.STDOUT,
                           preexec_fn=limit_memory(args.mem_gib))
    return r.returncode, open(log.name, encoding="utf-8", errors="replace").read()


# ---------------------------------------------------------------- results

def family_of(nodeid):
    """'core/mlp' for test/integration/nkilib/core/mlp/test_mlp.py::..."""
    parts = nodeid.split("::")[0].split("/")
    if "nkilib" in parts:
        rest = parts[parts.index("nkilib") + 1:-1]
        return "/".join(rest[:2]) if rest and rest[0] in ("core", "experimental") else (
            "/".join(rest[:1]) or "(top)")
    return "/".join(parts[:-1]) or "(top)"


def load_results(path):
    """Records: collected test ids (each once), per-test outcomes,
    collection errors."""
    collected, outcomes, collect_errors = {}, {}, []
    if os.path.exists(path):
        for line in open(path, encoding="utf-8"):
            rec = json.loads(line)
            if rec["when"] == "collected":
                collected[rec["test"]] = None
            elif rec["when"] == "collect":
                if all(r["test"] != rec["test"] for r in collect_errors):   # each worker reports it
                    collect_errors.append(rec)
            elif rec["test"] not in outcomes or rec["outcome"] == "failed":
                outcomes[rec["test"]] = rec
    return list(collected), outcomes, collect_errors


def carry_over(earlier, results, done_list):
    """Resume a run: copy the outcomes an earlier run's results.jsonl has
    (and those tests' collected records) into results, and write their ids
    to done_list, which the plugin deselects (NKILIB_DONE)."""
    _, outcomes, _ = load_results(earlier)
    with open(results, "a", encoding="utf-8") as out, open(done_list, "w", encoding="utf-8") as ids:
        for test, rec in outcomes.items():
            out.write(json.dumps({"test": test, "when": "collected"}) + "\n")
            out.write(json.dumps(rec) + "\n")
            ids.write(test + "\n")
    return len(outcomes)


MISSING_RE = [
    (re.compile(r"module '([\w\.]+)' has no attribute '(\w+)'"), lambda m: m.group(1) + "." + m.group(2)),
    (re.compile(r"cannot import name '(\w+)' from '([\w\.]+)'"), lambda m: m.group(2) + "." + m.group(1)),
    (re.compile(r"trnemu's nki has no module ([\w\.]+)"), lambda m: m.group(1)),
    (re.compile(r"No module named '([\w\.]+)'"), lambda m: m.group(1)),
]


def cause_of_text(text):
    """(kind, detail) from an error's text (collection and session errors)."""
    for rx, name in MISSING_RE:
        hits = [name(m) for m in rx.finditer(text)]
        hits = [h.replace("nki_cpu_simulator.", "") for h in hits]
        if hits:
            missing = hits[-1]
            if missing.split(".")[0] == "nki":
                return "missing name", missing
            if missing.split(".")[0] in ("nkilib_src", "test", "integration"):
                return "missing upstream module", missing
            return "missing dependency", missing
    last = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    err = [ln for ln in last if re.match(r"^(E\s+)?\w*(Error|Exception)\b", ln)]
    return "test error", (err[-1] if err else (last[-1] if last else "?"))[:300]


def session_end(output, lines=4):
    """Why tests were left without an outcome: the last lines the pytest
    session printed (a crash, an interrupted worker, a limit), in one."""
    tail = [ln.strip() for ln in output.splitlines() if ln.strip()][-lines:]
    return "no outcome reported; the session ended with: " + " | ".join(tail)[-600:] \
        if tail else "no outcome reported (the session printed nothing)"


MAX_WORKER_DEATHS = 1000
# what a dying worker prints last (Python's fault handler, the C++ runtime,
# glibc, the kernel's shell message, OpenBLAS)
DYING_WORDS = re.compile(r"(Fatal Python error: .*|terminate called .*|\s*what\(\): .*|"
                         r"Segmentation fault.*|Killed.*|malloc\(\): .*|.*std::bad_alloc.*|"
                         r"OpenBLAS.*(error|terminate|failed).*|.*[Cc]annot allocate memory.*)")


def worker_deaths(output):
    """{'gw0': [why it died, ...]} from the session's log: for each "[gwN]
    node down" line, the dying words printed since the one before (the
    workers share the log, so a line is given to the worker that went down
    next)."""
    deaths, words = collections.defaultdict(list), []
    for line in output.splitlines():
        down = re.search(r"\[(gw\d+)\] node down: (.*)", line)
        if down:
            deaths[down.group(1)].append(" / ".join(words[:3]) or down.group(2).strip())
            words = []
        else:
            said = DYING_WORDS.search(line)      # after the progress dots, perhaps
            if said:
                words.append(said.group(0).strip()[:200])
    return deaths


def name_worker_deaths(outcomes, output):
    """Put each dead worker's last words into the cause of the test it died
    in (in order: a worker replaced keeps its name)."""
    deaths = {w: list(v) for w, v in worker_deaths(output).items()}
    for rec in outcomes.values():
        if rec.get("when") != "crash":
            continue
        m = re.search(r"worker '(gw\d+)'", rec["cause"][1])
        said = deaths.get(m.group(1)) if m else None
        rec["cause"] = ["worker died", said.pop(0) if said else "no words (killed?)"]


def session_blocker(output):
    """The error that stopped the session before any test ran, if any."""
    if "Error" not in output:
        return None
    return cause_of_text(output[-6000:])


# ---------------------------------------------------------------- static scan

class NameScan(ast.NodeVisitor):
    """The names of nki modules one source file uses, and the local modules
    it imports."""

    def __init__(self, package):
        self.package = package  # the dotted package the file belongs to (for relative imports)
        self.aliases = {}       # local name -> nki module it stands for
        self.used = set()       # 'nki.language.foo', 'nki.compiler' (modules too)
        self.imports = set()    # dotted names of every module imported

    def visit_Import(self, node):
        for a in node.names:
            self.imports.add(a.name)
            if a.name.split(".")[0] in NKI_ROOTS:
                self.used.add(a.name)
                self.aliases[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]

    def visit_ImportFrom(self, node):
        mod = node.module or ""
        if node.level:
            base = self.package.split(".")[:len(self.package.split(".")) - (node.level - 1)]
            mod = ".".join([p for p in base if p] + ([mod] if mod else []))
            for a in node.names:
                self.imports.add(mod + "." + a.name)
        self.imports.add(mod)
        if mod.split(".")[0] in NKI_ROOTS and node.level == 0:
            self.used.add(mod)
            for a in node.names:
                self.used.add(mod + "." + a.name)
                self.aliases[a.asname or a.name] = mod + "." + a.name
        elif node.level == 0:
            for a in node.names:
                self.imports.add(mod + "." + a.name)

    def visit_Attribute(self, node):
        chain = []
        cur = node
        while isinstance(cur, ast.Attribute):
            chain.append(cur.attr)
            cur = cur.value
        if isinstance(cur, ast.Name) and cur.id in self.aliases:
            base = self.aliases[cur.id]
            self.used.add(base + "." + chain[-1])
        self.generic_visit(node)


# modules the suite's simulation set-up makes up itself: alias -> trnemu's module
SUITE_ALIASES = {"nki.dtype": "nki.language.dtypes"}


def _canonical(name):
    """The trnemu name a name of the suite stands for."""
    if name.startswith("nki_cpu_simulator."):
        name = name[len("nki_cpu_simulator."):]
    for alias, target in SUITE_ALIASES.items():
        if name == alias or name.startswith(alias + "."):
            return target + name[len(alias):]
    return name


def trnemu_lacks(name, cache={}):
    """True when trnemu's nki has no module or attribute of this dotted name."""
    name = _canonical(name)
    if name in cache:
        return cache[name]
    parts = name.split(".")
    obj, ok = None, True
    for i in range(1, len(parts) + 1):
        prefix = ".".join(parts[:i])
        if obj is not None and hasattr(obj, parts[i - 1]):
            obj = getattr(obj, parts[i - 1])
            continue
        try:
            obj = importlib.import_module(prefix)
        except ImportError:
            ok = False
            break
    cache[name] = not ok
    return not ok


def module_files(copy):
    """Dotted module name -> file, for the library's sources and tests."""
    out = {}
    for base in (os.path.join(copy, "src"), copy):
        for d, _, files in os.walk(base):
            for f in files:
                if not f.endswith(".py"):
                    continue
                p = os.path.join(d, f)
                rel = os.path.relpath(p, base)[:-3].replace(os.sep, ".")
                rel = rel[:-len(".__init__")] if rel.endswith(".__init__") else rel
                out.setdefault(rel, p)
    return out


def scan_files(copy):
    """Per file: the nki names it uses and the local modules it imports."""
    mods = module_files(copy)
    scans = {}
    for mod, path in mods.items():
        try:
            tree = ast.parse(open(path, encoding="utf-8").read())
        except (SyntaxError, UnicodeDecodeError):
            continue
        is_pkg = os.path.basename(path) == "__init__.py"
        s = NameScan(mod if is_pkg else mod.rpartition(".")[0])
        s.visit(tree)
        local = set()
        for imp in s.imports:
            parts = imp.split(".")
            for i in range(len(parts), 0, -1):
                if ".".join(parts[:i]) in mods:
                    local.add(".".join(parts[:i]))
                    break
        scans[path] = (s.used, {mods[m] for m in local})
    return scans


def closure(path, scans, memo):
    """Every nki name a file uses, itself or through the local modules it imports."""
    if path in memo:
        return memo[path]
    memo[path] = set()
    used, deps = scans.get(path, (set(), set()))
    total = set(used)
    for d in deps:
        total |= closure(d, scans, memo)
    memo[path] = total
    return total


def conftests_of(path, copy):
    """The conftest.py files that apply to a test file (its folders up to the copy's root)."""
    out, d = [], os.path.dirname(path)
    while d.startswith(copy):
        c = os.path.join(d, "conftest.py")
        if os.path.exists(c):
            out.append(c)
        if d == copy:
            break
        d = os.path.dirname(d)
    return out


def blocking_names(copy, tests, python_dir):
    """[(name, tests whose files use it)] for the names trnemu lacks."""
    if python_dir not in sys.path:
        sys.path.insert(0, python_dir)
    scans = scan_files(copy)
    per_file = collections.Counter(t.split("::")[0].split(" ")[0] for t in tests)
    memo, blocked = {}, collections.Counter()
    for rel, n in per_file.items():
        path = next((p for p in (os.path.join(copy, "test", rel), os.path.join(copy, rel))
                     if os.path.exists(p)), None)
        names = set()
        for f in ([path] + conftests_of(path, copy)) if path else ():
            names |= {_canonical(x) for x in closure(f, scans, memo)}
        for name in names:
            if trnemu_lacks(name):
                blocked[name] += n
    # a name under a missing module or class is that one's consequence: keep the first missing prefix
    first = {n: c for n, c in blocked.items()
             if not any(n.startswith(p + ".") for p in blocked)}
    return sorted(first.items(), key=lambda kv: (-kv[1], kv[0]))


# ---------------------------------------------------------------- report

MEMORY_KNOB = "TEST_ATTN_BLK_TKG_MAX_MEMORY_GB"
RUN_ALL_KNOB = "NKILIB_SIMULATION_RUN_ALL"      # the suite's switch for its slow-shape skips
MEMORY_SKIP = "Estimated memory"     # the start of the suite's skip reason for that limit


def over_memory(rec):
    """Did the test skip itself by its own estimate of its tensors?"""
    return rec["outcome"] == "skipped" and MEMORY_SKIP in rec.get("reason", "")


def memory_bound(rec):
    """Did the test stop at the data limit (its own arrays), or skip itself
    by its own estimate of them? Such a test may pass with more memory."""
    if rec["outcome"] == "failed":
        return rec.get("cause", [""])[0] == "memory limit"
    return over_memory(rec)


def retry_memory_bound(args, copy, work, outcomes):
    """Run the memory-bound tests again on one worker with args.retry_memory
    GiB; their new outcomes replace the old. (retried, now passing)."""
    ids = sorted(t for t, rec in outcomes.items() if memory_bound(rec))
    if not ids:
        return 0, 0
    only = os.path.join(work, "retry.txt")
    with open(only, "w", encoding="utf-8") as f:
        f.write("\n".join(ids) + "\n")
    retry = argparse.Namespace(**vars(args))
    retry.workers, retry.mem_gib, retry.only, retry.done = 1, args.retry_memory, only, None
    results = os.path.join(work, "results-retry.jsonl")
    run_suite(retry, copy, "simulation", results, log_name="retry")
    _, again, _ = load_results(results)
    for t in ids:
        if t in again:
            outcomes[t] = dict(again[t], retried=True)
    return len(ids), sum(1 for t in ids if t in again and again[t]["outcome"] == "passed")


def summarize(collected, outcomes, collect_errors, blocker, ended=None):
    """Per family: Counter of collected/passed/failed/skipped; and the
    failures as {(kind, detail): [test ids]}; ended: why tests were given
    no outcome (session_end)."""
    fam = collections.defaultdict(collections.Counter)
    causes = collections.defaultdict(list)
    for t in collected:
        f = family_of(t)
        fam[f]["collected"] += 1
        rec = outcomes.get(t)
        if rec is None:
            fam[f]["failed"] += 1
            causes[tuple(blocker) if blocker else ("not run", ended or "no outcome reported")
                   ].append(t)
        elif rec["outcome"] == "passed":
            fam[f]["passed"] += 1
        elif over_memory(rec):
            fam[f]["over memory"] += 1
        elif rec["outcome"] == "skipped":
            fam[f]["skipped"] += 1
        elif rec.get("trace_only"):
            fam[f]["trace-only"] += 1
            causes[("trace-only", rec["cause"][1])].append(t)
        else:
            fam[f]["failed"] += 1
            causes[tuple(rec["cause"])].append(t)
    for rec in collect_errors:
        f = family_of(rec["test"])
        fam[f]["collection errors"] += 1
        causes[cause_of_text(rec["text"])].append(rec["test"] + " (collection)")
    return fam, causes


def pass_rate(counts):
    """Passed over the tests that ran on trnemu, as a percentage string."""
    ran = counts["collected"] - counts["skipped"] - counts["trace-only"] - counts["over memory"]
    return "%.1f%%" % (100.0 * counts["passed"] / ran) if ran > 0 else "-"


def format_report(args, fam, causes, blocked, patched, blocker, elapsed):
    out = []
    out.append("NKI Library suite on trnemu: %s, -m %r%s, %s" % (
        args.root, args.marker, (" -k %r" % args.k) if args.k else "",
        time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())))
    out.append("commit: %s; %.0f s; workers %d; timeout %d s; data limit %.1f GiB%s%s%s" % (
        library_commit(args.root), elapsed, args.workers, args.timeout, args.mem_gib,
        "; race checker on" if getattr(args, "racecheck", False) else "",
        "; every kernel twice, same bits" if getattr(args, "twice", False) else "",
        "; slow-for-simulation shapes run (%s=1)" % RUN_ALL_KNOB
        if getattr(args, "run_all", False) else ""))
    if getattr(args, "retried", None):
        out.append("memory-bound tests run again on one worker with %g GiB: %d, of which %d pass "
                   "(their outcomes below are the second run's)"
                   % ((args.retry_memory,) + tuple(args.retried)))
    if patched:
        out.append("changed in the copy (upstream defects): %s" % ", ".join(patched))
    if blocker:
        out.append("the session stopped before running tests: %s: %s" % blocker)
    out.append("")
    cols = ["collected", "passed", "failed", "skipped", "over memory", "trace-only", "collection errors"]
    out.append("%-28s %s %9s" % ("family", " ".join("%9s" % c[:9] for c in cols), "pass rate"))
    total = collections.Counter()
    for f in sorted(fam):
        total.update(fam[f])
        out.append("%-28s %s %9s" % (f, " ".join("%9d" % fam[f][c] for c in cols), pass_rate(fam[f])))
    out.append("%-28s %s %9s" % ("total", " ".join("%9d" % total[c] for c in cols), pass_rate(total)))
    out.append("pass rate: passed / (collected - skipped - over memory - trace-only); skipped: the "
               "suite's own skips (shapes it marks slow for simulation, platforms); over memory: tests "
               "that skip themselves when their estimate of their tensors exceeds %s (set to the "
               "data limit); trace-only: tests of the vendor compiler's front end "
               "(nki.compiler.frontend), which no simulator replaces" % MEMORY_KNOB)
    out.append("")
    out.append("failures by cause (tests):")
    by_kind = collections.defaultdict(list)
    for (kind, detail), tests in causes.items():
        by_kind[kind].append((len(tests), detail, tests))
    for kind in sorted(by_kind, key=lambda k: -sum(n for n, _, _ in by_kind[k])):
        items = sorted(by_kind[kind], key=lambda x: (-x[0], x[1]))
        out.append("  %s: %d" % (kind, sum(n for n, _, _ in items)))
        for n, detail, tests in items:
            out.append("    %5d  %s" % (n, detail))
            shown = tests if args.show is None else tests[:args.show]
            for t in shown:
                out.append("           %s" % t)
            if len(tests) > len(shown):
                out.append("           ... %d more" % (len(tests) - len(shown)))
    out.append("")
    out.append("names the suite's sources use that trnemu's nki lacks, by the collected tests (or files that")
    out.append("failed to collect) that use them, themselves or through the library modules they import:")
    for name, n in blocked:
        out.append("  %5d  %s" % (n, name))
    return "\n".join(out) + "\n"


def library_commit(root):
    try:
        r = subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"],
                           capture_output=True, text=True, timeout=10)
        return r.stdout.strip() or "unknown (not a git checkout)"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


# ---------------------------------------------------------------- main

def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("root", help="a checkout of aws-neuron/nki-library")
    ap.add_argument("-m", dest="marker", default="fast", help="pytest marker expression (default fast; '' for all)")
    ap.add_argument("-k", default=None, help="pytest -k expression")
    ap.add_argument("--paths", nargs="*", help="test paths inside the checkout (default test/integration)")
    ap.add_argument("--workers", type=int, default=2, help="pytest-xdist workers, 1 or 2 (default 2)")
    ap.add_argument("--timeout", type=int, default=600, help="seconds per test (default 600)")
    ap.add_argument("--mem-gib", type=float, default=6.0, help="data-size limit per process (default 6 GiB)")
    ap.add_argument("--platform", default="trn2", choices=sorted(PLATFORM_INSTANCES),
                    help="--platform-target of the suite (default trn2); trnemu emulates its machine "
                         "(TRNEMU_INSTANCE trn1.32xlarge, trn2.48xlarge or trn3.48xlarge unless set)")
    ap.add_argument("--python", default=TRNEMU_PY,
                    help="folder holding the nki, nki_cpu_simulator and neuron_dtypes packages "
                         "(default: this tree's python/)")
    ap.add_argument("--libnrt", default=None, help="trnemu's libnrt.so.1 (default: the source tree's build)")
    ap.add_argument("--racecheck", action="store_true",
                    help="run with TRNEMU_RACECHECK=1: a race between engines or cores fails its test")
    ap.add_argument("--twice", action="store_true",
                    help="run every kernel twice and fail a test whose runs differ in any bit")
    ap.add_argument("--run-all", action="store_true",
                    help="run the shapes the suite skips as slow for simulation (its own %s=1)"
                         % RUN_ALL_KNOB)
    ap.add_argument("--resume", default=None, metavar="RESULTS",
                    help="an earlier run's results.jsonl (kept with --keep): its tests with an outcome "
                         "are not run again, and the report counts them with their earlier outcome")
    ap.add_argument("--retry-memory", type=float, default=None, metavar="GIB",
                    help="afterwards, run the tests that met the data limit (or skipped themselves "
                         "by their memory estimate) again on one worker with GIB GiB; the report "
                         "counts their new outcomes")
    ap.add_argument("--report", default="/tmp/nkilib-report.txt", help="where the report is also written")
    ap.add_argument("--show", type=int, default=None, help="test ids listed per cause (default: all)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary copy and its logs")
    ap.add_argument("--keep-artifacts", action="store_true", help="keep every test's artifacts in the copy's neuron_test_output/ (tens of GB over a long run; by default the suite removes each when its test ends)")
    args = ap.parse_args(argv)
    args.workers = max(1, min(2, args.workers))
    args.python = os.path.abspath(args.python)
    if args.libnrt is None:
        built = os.path.join(REPO, "build", "shims", "libnrt.so.1")
        args.libnrt = built if os.path.exists(built) else None
    return args


def main(argv=None):
    args = parse_args(argv)
    if not os.path.isdir(os.path.join(args.root, "test", "integration")):
        print("run_nkilib: %s is not an nki-library checkout (no test/integration)" % args.root)
        return 2
    missing = missing_packages()
    if missing:
        print("run_nkilib: the suite needs Debian packages that %s cannot import (run this "
              "with Debian's /usr/bin/python3):\n  apt-get install -y %s"
              % (sys.executable, " ".join(missing)))
        return 2
    work = tempfile.mkdtemp(prefix="nkilib-")
    copy = os.path.join(work, "nki-library")
    t0 = time.time()
    patched = copy_checkout(args.root, copy)
    results = os.path.join(work, "results.jsonl")
    if args.resume:
        done = os.path.join(work, "done.txt")
        print("run_nkilib: %d tests have an outcome in %s; not run again"
              % (carry_over(args.resume, results, done), args.resume))
        args.done = done
    _, output = run_suite(args, copy, "simulation", results)
    collected, outcomes, collect_errors = load_results(results)
    name_worker_deaths(outcomes, output)
    if args.retry_memory:
        retried, passing = retry_memory_bound(args, copy, work, outcomes)
        args.retried = (retried, passing)
        print("run_nkilib: %d memory-bound tests run again on one worker with %g GiB: %d pass"
              % (retried, args.retry_memory, passing))
    blocker = None
    if not outcomes and not collected:
        blocker = session_blocker(output)
        # count what the session would have run: collect without the simulator
        run_suite(args, copy, "compile-only", results, collect_only=True)
        collected, _, collect_errors = load_results(results)
    fam, causes = summarize(collected, outcomes, collect_errors, blocker, session_end(output))
    blocked = blocking_names(copy, collected + [r["test"] for r in collect_errors], args.python)
    report = format_report(args, fam, causes, blocked, patched, blocker, time.time() - t0)
    sys.stdout.write(report)
    if args.report:
        with open(args.report, "w", encoding="utf-8") as f:
            f.write(report)
    if args.keep:
        print("run_nkilib: the copy and its logs are in %s" % work)
    else:
        shutil.rmtree(work, ignore_errors=True)
    failed = sum(v["failed"] + v["collection errors"] for v in fam.values())
    return 1 if failed or not collected else 0


if __name__ == "__main__":
    sys.exit(main())
