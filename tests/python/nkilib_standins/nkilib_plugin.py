"""nkilib_plugin.py: the pytest plugin run_nkilib.py loads (-p nkilib_plugin)
into the NKI Library suite. It changes nothing of what a test checks:

- each pytest-xdist worker gets an emulated instance of its own
  (TRNEMU_INSTANCE_NAME gets the worker id appended), since two processes
  on one instance would claim the same NeuronCores;
- works around two upstream defects of the suite's Orchestrator in
  simulation mode: it reads self._compiled_kernel, which only its
  compilation step (skipped when simulating) sets (the class gets the
  value None); and its simulation path (test/utils/simulation_setup.py)
  runs every kernel once, in one process, with one dict of inputs, where
  a collectives test (inference_args.collective_ranks N > 1) gives inputs
  and goldens per rank (PerRankLazyInputGenerator, PerRankLazyGoldenGenerator)
  and its hardware path runs N ranks. Such a test runs here on N trnemu
  ranks (nki.cpu_simulate(kernel)[lnc].ranks(), one process per rank
  started by `trnemu launch`), rank r with its own inputs (the one dict
  for every rank when the test gives one), and each rank's outputs are
  written where the hardware path puts them (output_worker_<r>/ of the
  inference artifacts), so that the suite's own validation checks rank r
  against rank r's goldens (rank 0 only, for a test with one golden);
- lets the suite's torch references index with int32 tensors on Debian
  12's torch 1.13 (torch_compat.py; newer torch takes them as they are);
- with TRNEMU_NKILIB_TWICE=1, runs every kernel twice and fails a test
  whose two runs differ in any bit (determinism.py);
- frees what a test leaves in reference cycles when it ends (its arrays,
  held by a failure's frames or by suite objects that point at each
  other), so the next test in the worker does not meet the data limit
  with the last test's arrays still counted;
- with NKILIB_DONE (a file of test ids, one a line: the tests a resumed
  run already has an outcome for), deselects those tests; with NKILIB_ONLY
  (the same: the tests a retry runs), every other test;
- records every test's outcome with the cause of a failure, found on the
  exception itself (missing name, trace error, execution error, wrong
  number, ...), one JSON line per test in the file NKILIB_RESULTS names.
"""
import gc
import json
import os
import re
import sys
import traceback

import pytest

_worker = os.environ.get("PYTEST_XDIST_WORKER")
if _worker:
    os.environ["TRNEMU_INSTANCE_NAME"] = os.environ.get("TRNEMU_INSTANCE_NAME", "nkilib") + "-" + _worker


def _patch_orchestrator():
    mod = sys.modules.get("test.utils.test_orchestrator")
    cls = getattr(mod, "Orchestrator", None)
    if cls is not None and not hasattr(cls, "_compiled_kernel"):
        cls._compiled_kernel = None
    if cls is not None and not getattr(cls._run_simulator_inference, "trnemu_ranks", False):
        cls._run_simulator_inference = _ranks_inference(cls._run_simulator_inference,
                                                        mod.INF_ARTIFACT_DIR_NAME)


def _rank_inputs(kut, n):
    """Rank r's keyword arguments, r = 0..n-1, named as the kernel's
    parameters (the suite's simulate_kernel strips the same suffix)."""
    from test.utils.common_dataclasses import PerRankLazyInputGenerator
    given = kut.kernel_input or {}
    out = []
    for r in range(n):
        kw = given.for_rank(r) if isinstance(given, PerRankLazyInputGenerator) else given
        out.append({k.removesuffix(".must_alias_input"): v for k, v in kw.items()})
    return out


def _rank_outputs(kut):
    """[{output name: array}] per rank of a collectives test, named and
    typed after that rank's goldens as run_simulator_inference does."""
    import numpy as np
    import nki
    from test.utils.common_dataclasses import normalize_golden_output
    if kut.validation_args is None:
        raise ValueError("Simulation mode requires validation_args to verify outputs")
    n = kut.inference_args.collective_ranks
    os.environ["NKI_NC_VERSION"] = kut.compiler_input.platform_target.get_nc_gen()
    sim = nki.cpu_simulate(kut.kernel_func)[kut.compiler_input.logical_nc_config]
    results = sim.ranks(_rank_inputs(kut, n))
    per_rank = []
    for r, res in enumerate(results):
        outs = [] if res is None else list(res) if isinstance(res, (list, tuple)) else [res]
        golden = normalize_golden_output(kut.validation_args.golden_output, rank_id=r)
        if len(outs) != len(golden):
            raise RuntimeError("rank %d: the kernel returned %d outputs but %d are expected (%s)"
                               % (r, len(outs), len(golden), list(golden)))
        per_rank.append({name: np.asarray(o, dtype=g.dtype)
                         for (name, g), o in zip(golden.items(), outs)})
    return per_rank


def _ranks_inference(original, inf_dir_name):
    """Orchestrator._run_simulator_inference that runs a collectives test
    on its ranks and leaves the others to the suite's own."""
    def run(self, kernel_under_test):
        if kernel_under_test.inference_args.collective_ranks <= 1:
            return original(self, kernel_under_test)
        from test.utils.exceptions import InferenceException
        from test.utils.metrics_collector import MetricName
        try:
            with self.emitter.get_collector().timer(MetricName.SIMULATION_TIME):
                per_rank = _rank_outputs(kernel_under_test)
            base = os.path.join(self.fs_config.artifacts_output_directory_path, inf_dir_name)
            for r, outs in enumerate(per_rank):
                self.__dump_tensors__(os.path.join(base, "output_worker_%d" % r), outs,
                                      lambda name: name)
            return base
        except Exception as e:
            raise InferenceException(str(e)) from e
    run.trnemu_ranks = True
    return run


@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    _patch_orchestrator()
    import torch_compat
    torch_compat.install()
    if os.environ.get("TRNEMU_NKILIB_TWICE") == "1":
        import determinism
        import nki
        determinism.install(nki)


def pytest_sessionstart(session):
    _patch_orchestrator()


def _chain(exc):
    """The exception and those it was raised from or during, outermost first."""
    seen = []
    while exc is not None and exc not in seen:
        seen.append(exc)
        exc = exc.__cause__ or exc.__context__
    return seen


def _frames(exc):
    """(file, function) of the stack that raised exc: for an error of one
    of a collectives test's ranks, that rank's (nki's rank_frames)."""
    ranks = getattr(exc, "rank_frames", None)
    if ranks is not None:
        return ranks
    return [(f.filename, f.name) for f in traceback.extract_tb(exc.__traceback__)]


def _missing_name(exc):
    """'nki.language.foo' for a name trnemu's nki lacks, else None."""
    kind, msg = getattr(exc, "rank_error", (None, ""))
    m = re.match(r"module '([\w.]+)' has no attribute '(\w+)'", msg)
    if kind == "AttributeError" and m and m.group(1).split(".")[0] in ("nki", "nki_cpu_simulator"):
        return "%s.%s" % m.groups()       # in one of a collectives test's ranks
    if isinstance(exc, AttributeError):
        obj = getattr(exc, "obj", None)
        mod = getattr(obj, "__name__", "") if obj is not None else ""
        if isinstance(mod, str) and mod.split(".")[0] in ("nki", "nki_cpu_simulator") and exc.name:
            return "%s.%s" % (mod, exc.name)
    if isinstance(exc, ImportError):
        msg = str(exc)
        if msg.startswith("cannot import name '"):
            name = msg.split("'")[1]
            src = exc.name or ""
            if src.split(".")[0] in ("nki", "nki_cpu_simulator"):
                return "%s.%s" % (src, name)
        elif exc.name and exc.name.split(".")[0] in ("nki", "nki_cpu_simulator"):
            return exc.name
    return None


def _trnemu_phase(exc):
    """'trace' or 'execution' for an error trnemu's nki raised (an NKIError
    or one of its subclasses, or the IndexError of an indexed DMA past its
    tensor, raised where a kernel runs), else None."""
    names = [n for f, n in _frames(exc) if "/nki/" in f.replace(os.sep, "/")]
    ours = any(c.__name__ == "NKIError" for c in type(exc).__mro__)
    if not ours and not (type(exc) is IndexError and names and names[-1] == "_run"):
        return None
    running = any(n.lstrip("_").startswith(("run", "execute")) for n in names)
    return "execution" if running else "trace"


# The text of the library's own input validation (core/utils/kernel_assert):
# the kernel refusing the arguments the test gave it, as it would on any
# simulator or device; on a rank it arrives inside trnemu's NKIError.
KERNEL_REJECTS = "Kernel validation exception"
# torch's CPU allocator reports a failed allocation as a RuntimeError.
TORCH_OUT_OF_MEMORY = "DefaultCPUAllocator: can't allocate memory"
# trnemu's own errors when the process's data limit stops it (the
# assembler, the loader, the emulated core): the kernel is not at fault.
HOST_OUT_OF_MEMORY = re.compile(r"\bout of (host )?memory\b")


def classify(exc):
    """(cause kind, detail) of a failed test's exception."""
    chain = _chain(exc)
    for e in chain:
        name = _missing_name(e)
        if name:
            return "missing name", name
    for e in chain:
        if KERNEL_REJECTS in str(e):
            return "kernel rejects inputs", _first_line(e)
    for e in chain:
        phase = _trnemu_phase(e)
        if phase and HOST_OUT_OF_MEMORY.search(str(e)):
            return "memory limit", _first_line(e)
        if phase:
            return phase + " error", _first_line(e)
    for e in chain:
        if isinstance(e, MemoryError) or TORCH_OUT_OF_MEMORY in str(e):
            return "memory limit", _first_line(e) or "MemoryError"
        if isinstance(e, AssertionError) and "Validation failed" in str(e):
            return "wrong number", _first_line(e)
        if type(e).__name__ == "NotDeterministic":
            return "not deterministic", _first_line(e)
    for e in chain:
        if type(e).__name__ == "Failed" and "Timeout" in str(e):
            return "timeout", _first_line(e)
    inner = chain[-1]
    return "test error", "%s: %s%s" % (type(inner).__name__, _first_line(inner), _where(inner))


def _where(exc):
    """' (file:line)' of the innermost frame of an exception, relative to
    the suite's copy when inside it."""
    tb = traceback.extract_tb(exc.__traceback__)
    if not tb:
        return ""
    f = tb[-1]
    path = os.path.relpath(f.filename) if f.filename.startswith(os.getcwd()) else f.filename
    return " (%s:%d)" % (path, f.lineno)


def _first_line(exc):
    text = str(exc).strip()
    return text.splitlines()[0][:300] if text else ""


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if call.excinfo is not None and rep.failed:
        kind, detail = classify(call.excinfo.value)
        rep.user_properties.append(("trnemu_cause", json.dumps([kind, detail])))
    if item.get_closest_marker("trace_only") is not None:
        rep.user_properties.append(("trnemu_trace_only", "1"))
    if worth_collecting(rep):
        _ran.add(item.nodeid)


_ran = set()   # tests whose end is worth a full collection


def worth_collecting(rep):
    """A phase's report that makes its test's end worth a full collection:
    a failure (its frames hold the test's arrays), or a body that ran."""
    return rep.failed or (rep.when == "call" and not rep.skipped)


@pytest.hookimpl(trylast=True)
def pytest_runtest_logfinish(nodeid, location):
    """The test has ended: drop pytest's post-mortem copy of its failure
    (sys.last_*, with the frames that hold its arrays) and collect the
    cycles it left, before the next test allocates. A test skipped before
    its body ran leaves none worth a full collection (0.1 to 0.2 s each
    with torch loaded, over a minute for a file's hundreds of skips)."""
    for name in ("last_type", "last_value", "last_traceback"):
        sys.__dict__.pop(name, None)
    if nodeid in _ran:
        _ran.discard(nodeid)
        gc.collect()


def _write(record):
    path = os.environ.get("NKILIB_RESULTS")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps(record) + "\n")


def _trace_only(report):
    """Whether the test is marked trace_only: it checks that the vendor's
    compiler front end (nki.compiler.frontend, Python to MLIR) takes the
    kernel, which a simulator cannot stand in for; counted apart."""
    return any(k == "trnemu_trace_only" for k, _ in getattr(report, "user_properties", []))


def _cause_of(report):
    for k, v in getattr(report, "user_properties", []):
        if k == "trnemu_cause":
            return json.loads(v)
    crash = getattr(report.longrepr, "reprcrash", None)
    return ["test error", (crash.message if crash else str(report.longrepr))[:300]]


def pytest_runtest_logreport(report):
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return        # the controller records what the workers report
    if report.when not in ("setup", "call", "teardown") and report.failed:
        # pytest-xdist's report for the test a worker died in ("worker 'gw0'
        # crashed while running ..."); the runner finds the dying words
        _write({"test": report.nodeid, "when": "crash", "outcome": "failed",
                "cause": ["worker died", str(report.longrepr)[:300]]})
    elif report.when == "call" or (report.when == "setup" and not report.passed) or (
            report.when == "teardown" and report.failed):
        rec = {"test": report.nodeid, "when": report.when}
        if _trace_only(report):
            rec["trace_only"] = True
        if report.passed:
            rec["outcome"] = "passed"
        elif report.skipped:
            rec["outcome"] = "skipped"
            rec["reason"] = str(report.longrepr[-1]) if isinstance(report.longrepr, tuple) else ""
        else:
            rec["outcome"] = "failed"
            rec["cause"] = _cause_of(report)
        _write(rec)


def _id_list(var):
    """The test ids in the file the variable names (one a line), or None."""
    path = os.environ.get(var)
    return set(open(path, encoding="utf-8").read().split("\n")) if path else None


def pytest_collection_modifyitems(config, items):
    done, only = _id_list("NKILIB_DONE"), _id_list("NKILIB_ONLY")
    keep = [item for item in items if (done is None or item.nodeid not in done) and
            (only is None or item.nodeid in only)]
    if len(keep) != len(items):
        kept = {id(item) for item in keep}
        config.hook.pytest_deselected(items=[item for item in items if id(item) not in kept])
        items[:] = keep


def pytest_collectreport(report):
    if os.environ.get("PYTEST_XDIST_WORKER") or not report.failed:
        return
    _write({"test": report.nodeid, "when": "collect", "outcome": "error",
            "text": str(report.longrepr)[-4000:]})


def pytest_collection_finish(session):
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return
    for item in session.items:
        _write({"test": item.nodeid, "when": "collected"})


_collected_once = []


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node, ids):
    """With workers, the controller learns the collected tests from them
    (every worker collects the same list: record the first)."""
    if _collected_once:
        return
    _collected_once.append(node)
    for nodeid in ids:
        _write({"test": nodeid, "when": "collected"})
