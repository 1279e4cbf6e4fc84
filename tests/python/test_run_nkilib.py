"""test_run_nkilib.py: the parts of run_nkilib.py (the NKI Library suite
runner) and of its pytest plugin that need no copy of the library: the
upstream-defect patch, the kernel families, how a failure's cause is
found, and the per-rank golden inputs of nkilib_kvdp_check.py."""
import importlib.util
import os
import sys

import pytest

import nki
import nki.language as nl

HERE = os.path.dirname(os.path.abspath(__file__))


def load(path, name):
    """A module from its file, without putting its folder on sys.path (the
    stand-ins beside the plugin must not shadow anything here)."""
    spec = importlib.util.spec_from_file_location(name, os.path.join(HERE, path))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


run_nkilib = load("run_nkilib.py", "run_nkilib")
nkilib_plugin = load("nkilib_standins/nkilib_plugin.py", "nkilib_plugin")

PASTED = '''def f(x):
    """Adds one.

    Notes:
        - returns x + 1
    """

        - returns x + 1
    """

    return x + 1
'''


def test_patch_drops_a_docstring_block_pasted_after_its_end(tmp_path):
    p = tmp_path / "m.py"
    p.write_text(PASTED)
    assert run_nkilib.patch_duplicated_docstrings(str(p))
    ns = {}
    exec(p.read_text(), ns)
    assert ns["f"](1) == 2 and "returns x + 1" in ns["f"].__doc__
    assert not run_nkilib.patch_duplicated_docstrings(str(p))   # parses now: left alone


def test_patch_leaves_other_syntax_errors(tmp_path):
    p = tmp_path / "m.py"
    p.write_text("def f(:\n    pass\n")
    assert not run_nkilib.patch_duplicated_docstrings(str(p))
    assert p.read_text() == "def f(:\n    pass\n"


def test_families():
    assert run_nkilib.family_of("integration/nkilib/core/mlp/test_mlp.py::test_x[a]") == "core/mlp"
    assert run_nkilib.family_of(
        "test/integration/nkilib/core/moe/moe_cte/test_b.py::t") == "core/moe"
    assert run_nkilib.family_of("integration/nkilib/utils/test_u.py::t") == "utils"


def test_cause_of_collection_error_text():
    text = "E   AttributeError: module 'nki.language' has no attribute 'float8_e4m3fn_x4'"
    assert run_nkilib.cause_of_text(text) == ("missing name", "nki.language.float8_e4m3fn_x4")
    text = "E   ImportError: cannot import name 'NKIObject' from 'nki.language' (/x/language.py)"
    assert run_nkilib.cause_of_text(text) == ("missing name", "nki.language.NKIObject")
    text = "E   ModuleNotFoundError: No module named 'nkilib_src.nkilib.experimental.subkernels'"
    assert run_nkilib.cause_of_text(text)[0] == "missing upstream module"
    assert run_nkilib.cause_of_text("E   ValueError: bad shape") == ("test error", "E   ValueError: bad shape")


def raised(fn):
    try:
        fn()
    except BaseException as e:     # noqa: B036 - the test wants the exception object
        return e
    raise AssertionError("nothing raised")


def test_classify_missing_names_through_wrapping_exceptions():
    def inner():
        return nl.no_such_name_in_nki

    def wrapped():
        try:
            inner()
        except Exception as e:
            raise RuntimeError("inference failed") from e
    assert nkilib_plugin.classify(raised(wrapped)) == ("missing name", "nki.language.no_such_name_in_nki")


def test_classify_trace_and_execution_errors():
    def bad_kernel(a):
        out = nl.ndarray((3, 3), dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out, nl.load(a))          # shape mismatch: a trace error
        return out
    import numpy as np
    kind, detail = nkilib_plugin.classify(raised(lambda: nki.cpu_simulate(bad_kernel)[1](
        np.zeros((4, 4), np.float32))))
    assert kind == "trace error" and "test_run_nkilib.py" in detail


def test_classify_execution_errors():
    import nki.isa as nisa
    import numpy as np

    def stats_too_wide(a):
        out = nl.ndarray((a.shape[0], 6), dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(out, nisa.bn_stats(nl.load(a)))     # bn_stats refuses 1024 elements at run time
        return out
    kind, detail = nkilib_plugin.classify(raised(lambda: nki.cpu_simulate(stats_too_wide)[1](
        np.zeros((8, 1024), np.float32))))
    assert kind == "execution error" and "bn_stats" in detail


def test_classify_trnemus_subclasses_and_index_errors():
    import nki.isa as nisa
    import numpy as np

    def too_tall(a):
        t = nl.ndarray((129, 4), dtype=nl.float32, buffer=nl.sbuf)   # NkiValidationError
        return t

    def gather(a, idx):
        out = nl.ndarray((2, 4), dtype=a.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray((2, 4), dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a.ap([[4, 2], [1, 4]], vector_offset=nl.load(idx), indirect_dim=0))
        nl.store(out, t)
        return out
    a = np.zeros((8, 4), np.float32)
    kind, detail = nkilib_plugin.classify(raised(lambda: nki.cpu_simulate(too_tall)[1](a)))
    assert kind == "trace error" and "more than 128" in detail
    kind, detail = nkilib_plugin.classify(raised(lambda: nki.cpu_simulate(gather)[1](
        a, np.array([[1], [9]], np.int32))))
    assert (kind, detail) == ("execution error", "index 36 is out of bounds for axis 0 with size 32")
    assert nkilib_plugin.classify(raised(lambda: [][1]))[0] == "test error"   # not trnemu's
    for text in ("k.py:53: <kernel>: out of memory",
                 "k.py:39: <kernel>: sg01: the pool stream of 414032 instructions cannot be "
                 "encoded (out of host memory)"):
        def oom():
            raise nki.NKIError(text)
        assert nkilib_plugin.classify(raised(oom)) == ("memory limit", text)


def test_classify_wrong_numbers_and_other_errors():
    def validate():
        try:
            assert False, "Validation failed for ['out']"
        except AssertionError as e:
            raise RuntimeError("validation") from e
    assert nkilib_plugin.classify(raised(validate)) == ("wrong number", "Validation failed for ['out']")
    kind, detail = nkilib_plugin.classify(raised(lambda: {}["k"]))
    assert kind == "test error" and detail.startswith("KeyError: 'k' (") and "test_run_nkilib.py" in detail
    assert nkilib_plugin.classify(raised(lambda: (_ for _ in ()).throw(MemoryError())))[0] == "memory limit"
    torch_oom = RuntimeError("[enforce fail at alloc_cpu.cpp:75] err == 0. DefaultCPUAllocator: can't allocate "
                             "memory: you tried to allocate 2147483648 bytes.")
    assert nkilib_plugin.classify(raised(lambda: (_ for _ in ()).throw(torch_oom)))[0] == "memory limit"


def test_classify_kernel_rejecting_its_inputs():
    """The library's own input check, raised while tracing on a rank (so it
    arrives as trnemu's error text), is the kernel refusing the test's
    arguments, not a trace error of trnemu's."""
    def rank_failure():
        raise nki.NKIError("rank 1 of 2: AssertionError: [INTERNAL_ERROR] [NCC_INKI016] Kernel validation "
                           "exception: Incorrect shape for qkv weight scale for row quantization")
    kind, detail = nkilib_plugin.classify(raised(rank_failure))
    assert kind == "kernel rejects inputs" and "row quantization" in detail


@pytest.mark.parametrize("name,lacks", [("nki.language.load", False), ("nki.language.zzz_missing", True),
                                        ("nki.zzz_module.x", True), ("nki.dtype", None)])
def test_trnemu_lacks(name, lacks):
    if lacks is None:      # the suite's own alias: what it stands for decides
        name = run_nkilib._canonical(name)
        assert name == "nki.language.dtypes"
        return
    assert run_nkilib.trnemu_lacks(name) is lacks


def test_trace_only_tests_are_counted_apart():
    collected = ["test/integration/nkilib/core/utils/test_a.py::t1",
                 "test/integration/nkilib/core/utils/test_a.py::t2",
                 "test/integration/nkilib/core/utils/test_a.py::t3",
                 "test/integration/nkilib/core/utils/test_a.py::t4"]
    cause = ["missing name", "nki.compiler.frontend"]
    outcomes = {collected[0]: {"outcome": "passed"},
                collected[1]: {"outcome": "failed", "cause": cause, "trace_only": True},
                collected[2]: {"outcome": "skipped"},
                collected[3]: {"outcome": "failed", "cause": ["trace error", "x"]}}
    fam, causes = run_nkilib.summarize(collected, outcomes, [], None)
    counts = fam[run_nkilib.family_of(collected[0])]
    assert (counts["passed"], counts["failed"], counts["skipped"], counts["trace-only"]) == (1, 1, 1, 1)
    assert causes[("trace-only", "nki.compiler.frontend")] == [collected[1]]
    assert run_nkilib.pass_rate(counts) == "50.0%"


def test_tests_over_the_memory_limit_are_counted_apart():
    """A test that skips itself because its own estimate of its tensors is
    over the runner's limit is neither the suite's slow-shape skip nor a
    test that ran; and the runner hands that limit to the suite."""
    collected = ["test/integration/nkilib/experimental/transformer/test_a.py::t%d" % i for i in range(3)]
    outcomes = {collected[0]: {"outcome": "passed"},
                collected[1]: {"outcome": "skipped", "reason": "Skipped: Estimated memory 9.5 GiB exceeds "
                                                               "limit 6.0 GiB"},
                collected[2]: {"outcome": "skipped", "reason": "Skipping slow simulation test"}}
    fam, _ = run_nkilib.summarize(collected, outcomes, [], None)
    counts = fam["experimental/transformer"]
    assert (counts["skipped"], counts["over memory"], counts["passed"]) == (1, 1, 1)
    assert run_nkilib.pass_rate(counts) == "100.0%"
    env = run_nkilib.suite_env("/c", "/r", None, "/p", run_nkilib.parse_args(["/lib", "--mem-gib", "6"]))
    assert env.get(run_nkilib.MEMORY_KNOB, "6") == "6" or run_nkilib.MEMORY_KNOB in os.environ
    assert run_nkilib.RUN_ALL_KNOB not in env or run_nkilib.RUN_ALL_KNOB in os.environ


def test_run_all_turns_off_the_suites_slow_shape_skips():
    args = run_nkilib.parse_args(["/lib", "--run-all"])
    assert args.run_all
    env = run_nkilib.suite_env("/c", "/r", None, "/p", args)
    assert env[run_nkilib.RUN_ALL_KNOB] == "1"


def test_the_platform_picks_the_emulated_machine(monkeypatch):
    """--platform trn3 runs the suite on an emulated trn3.48xlarge (the
    suite's NKI_NC_VERSION gen4 needs it); the default, trn2, on a
    trn2.48xlarge; a TRNEMU_INSTANCE of the caller's is kept."""
    monkeypatch.delenv("TRNEMU_INSTANCE", raising=False)
    env = run_nkilib.suite_env("/c", "/r", None, "/p", run_nkilib.parse_args(["/lib", "--platform", "trn3"]))
    assert env["TRNEMU_INSTANCE"] == "trn3.48xlarge"
    env = run_nkilib.suite_env("/c", "/r", None, "/p", run_nkilib.parse_args(["/lib"]))
    assert env["TRNEMU_INSTANCE"] == "trn2.48xlarge"
    monkeypatch.setenv("TRNEMU_INSTANCE", "trn3pd98.3xlarge")
    env = run_nkilib.suite_env("/c", "/r", None, "/p", run_nkilib.parse_args(["/lib", "--platform", "trn3"]))
    assert env["TRNEMU_INSTANCE"] == "trn3pd98.3xlarge"
    with pytest.raises(SystemExit):
        run_nkilib.parse_args(["/lib", "--platform", "trn9"])


def test_a_job_of_ranks_gets_the_per_test_timeout():
    env = run_nkilib.suite_env("/c", "/r", None, "/p", run_nkilib.parse_args(["/lib", "--timeout", "900"]))
    assert env["TRNEMU_NKI_RANKS_TIMEOUT"] == os.environ.get("TRNEMU_NKI_RANKS_TIMEOUT", "900")


def test_each_tests_artifacts_are_removed_unless_kept():
    """The suite's own --force-local-cleanup keeps a long run's
    neuron_test_output/ from filling the disk; --keep-artifacts keeps them."""
    args = run_nkilib.parse_args(["/lib"])
    assert "--force-local-cleanup" in run_nkilib.pytest_command(args, "/c", "simulation")
    args = run_nkilib.parse_args(["/lib", "--keep-artifacts"])
    assert "--force-local-cleanup" not in run_nkilib.pytest_command(args, "/c", "simulation")


def test_a_missing_import_is_added_once(tmp_path):
    p = tmp_path / "t.py"
    p.write_text('"""doc"""\nimport os\n\n@dec(Platforms.TRN1)\ndef t():\n    pass\n')
    assert run_nkilib.patch_missing_import(str(p), "m.dataclasses", "Platforms")
    text = p.read_text()
    assert text.splitlines()[1].startswith("from m.dataclasses import Platforms")
    assert not run_nkilib.patch_missing_import(str(p), "m.dataclasses", "Platforms")
    assert p.read_text() == text


def test_torch_compat_widens_int32_indices():
    torch = pytest.importorskip("torch")
    compat = load("nkilib_standins/torch_compat.py", "torch_compat")
    compat.install()
    t = torch.arange(10.0)
    idx = torch.tensor([3, 1], dtype=torch.int32)
    assert t[idx].tolist() == [3.0, 1.0]
    t2 = torch.zeros(3, 4)
    t2[torch.tensor([2], dtype=torch.int32)] = 1.0
    assert t2.sum().item() == 4.0
    assert t[torch.tensor([True] + [False] * 9)].tolist() == [0.0]   # masks unchanged


def test_twice_reports_a_kernel_whose_runs_differ():
    import numpy as np
    det = load("nkilib_standins/determinism.py", "determinism")
    calls = []

    def launched(x):
        calls.append(x.copy())
        x += 1                                   # updates its input in place
        return np.full(2, len(calls), np.float32) if len(calls) > 1 else np.full(2, 1, np.float32)
    x = np.zeros(3, np.float32)
    with pytest.raises(det.NotDeterministic, match="array 0"):
        det.twice(launched, "k")(x)
    assert (calls[0] == calls[1]).all()          # both runs saw the same input

    def steady(x):
        x += 1
        return x * 2
    y = np.zeros(3, np.float32)
    out = det.twice(steady, "k")(y)
    assert (y == 1).all() and (out == 2).all()   # the second run's results are kept
    assert nkilib_plugin.classify(det.NotDeterministic("k: differs"))[0] == "not deterministic"


def test_twice_runs_a_job_of_ranks_twice():
    import numpy as np
    det = load("nkilib_standins/determinism.py", "determinism")

    class Launched:
        jobs = 0

        def ranks(self, inputs):
            Launched.jobs += 1
            return [np.full(2, r + (Launched.jobs if r == 1 else 0), np.float32)
                    for r in range(len(inputs))]
    with pytest.raises(det.NotDeterministic, match=r"k\.ranks: array 1"):
        det.twice(Launched(), "k").ranks([{}, {}])
    assert Launched.jobs == 2
    steady = type("Steady", (), {"ranks": lambda self, inputs: [np.zeros(2)] * len(inputs)})
    assert len(det.twice(steady(), "k").ranks([{}, {}, {}])) == 3


def test_a_tests_arrays_in_cycles_are_freed_when_it_ends():
    import weakref
    import numpy as np

    class Holder:
        pass
    h, arr = Holder(), np.zeros(1 << 20)
    h.me, h.arr = h, arr                       # a cycle holding the test's array
    gone = weakref.ref(arr)
    try:
        raise MemoryError("the test's reference")
    except MemoryError as e:
        sys.last_value, sys.last_traceback = e, e.__traceback__
    del h, arr
    assert gone() is not None                  # only a collection frees it
    nkilib_plugin._ran.add("t")                # as its failed call's report does
    nkilib_plugin.pytest_runtest_logfinish("t", None)
    assert gone() is None and not hasattr(sys, "last_value")


def test_only_a_test_that_ran_or_failed_is_followed_by_a_collection(monkeypatch):
    import types
    rep = lambda when, outcome: types.SimpleNamespace(  # noqa: E731
        when=when, failed=outcome == "failed", skipped=outcome == "skipped")
    assert nkilib_plugin.worth_collecting(rep("call", "passed"))
    assert nkilib_plugin.worth_collecting(rep("setup", "failed"))
    assert not nkilib_plugin.worth_collecting(rep("setup", "skipped"))
    assert not nkilib_plugin.worth_collecting(rep("call", "skipped"))
    assert not nkilib_plugin.worth_collecting(rep("setup", "passed"))
    calls = []
    monkeypatch.setattr(nkilib_plugin.gc, "collect", lambda: calls.append(1))
    nkilib_plugin.pytest_runtest_logfinish("skipped-one", None)
    assert calls == []
    nkilib_plugin._ran.add("ran-one")
    nkilib_plugin.pytest_runtest_logfinish("ran-one", None)
    assert calls == [1] and "ran-one" not in nkilib_plugin._ran


def test_classify_a_ranks_error_by_that_ranks_stack():
    e = nki.NKIError("rank 1 of 2: k.py:3: shapes differ")
    e.rank_frames = [("/x/nki/_ranks.py", "main"), ("/x/nki/_kernel.py", "_trace")]
    assert nkilib_plugin.classify(e)[0] == "trace error"
    e.rank_frames = [("/x/nki/_ranks.py", "main"), ("/x/nki/_kernel.py", "_run")]
    assert nkilib_plugin.classify(e)[0] == "execution error"
    e = nki.NKIError("rank 0 of 2: AttributeError: module 'nki.isa' has no attribute 'foo'")
    e.rank_frames, e.rank_error = [], ("AttributeError", "module 'nki.isa' has no attribute 'foo'")
    assert nkilib_plugin.classify(e) == ("missing name", "nki.isa.foo")


class _Timer:
    def timer(self, name):
        import contextlib
        return contextlib.nullcontext()


def _suite_stubs(monkeypatch):
    """The few names of the suite's test/utils the rank adapter imports."""
    import sys
    import types

    class PerRankLazyInputGenerator:
        def __init__(self, gen):
            self.for_rank = lambda rank_id: gen(rank_id=rank_id)

    class PerRankLazyGoldenGenerator(PerRankLazyInputGenerator):
        pass

    def normalize_golden_output(golden, rank_id=0):
        return golden.for_rank(rank_id) if isinstance(golden, PerRankLazyGoldenGenerator) else golden

    mods = {"test.utils.common_dataclasses": dict(
                PerRankLazyInputGenerator=PerRankLazyInputGenerator,
                PerRankLazyGoldenGenerator=PerRankLazyGoldenGenerator,
                normalize_golden_output=normalize_golden_output),
            "test.utils.exceptions": dict(InferenceException=type("InferenceException", (Exception,), {})),
            "test.utils.metrics_collector": dict(MetricName=types.SimpleNamespace(SIMULATION_TIME="t"))}
    for name, attrs in mods.items():
        m = types.ModuleType(name)
        m.__dict__.update(attrs)
        monkeypatch.setitem(sys.modules, name, m)
    return PerRankLazyInputGenerator, PerRankLazyGoldenGenerator


@pytest.mark.skipif(not os.path.exists(os.environ.get("TRNEMU_TOOL") or
                                       os.path.join(HERE, "..", "..", "build", "tools", "trnemu")),
                    reason="needs the trnemu tool (TRNEMU_TOOL)")
def test_a_collectives_test_runs_on_its_ranks(monkeypatch, tmp_path):
    """The adapter runs a test of collective_ranks 2 on two ranks, each with
    its own inputs, and writes rank r's outputs to output_worker_<r>/, named
    after rank r's goldens; a test of one rank goes to the suite's own path."""
    import types
    import numpy as np
    import nki.collectives as ncc
    import test_nki_ranks
    PerRankIn, PerRankGold = _suite_stubs(monkeypatch)
    xs = [np.full((2, 4), r + 1.0, np.float32) for r in range(2)]
    rg = ncc.ReplicaGroup([[0, 1]])
    kut = types.SimpleNamespace(
        kernel_func=test_nki_ranks.reduce_gather,
        kernel_input=PerRankIn(lambda rank_id: {"a": xs[rank_id], "rg": rg, "nranks": 2}),
        inference_args=types.SimpleNamespace(collective_ranks=2),
        compiler_input=types.SimpleNamespace(
            logical_nc_config=1, platform_target=types.SimpleNamespace(get_nc_gen=lambda: "gen3")),
        validation_args=types.SimpleNamespace(golden_output=PerRankGold(
            lambda rank_id: {"total": xs[0], "gathered": xs[0], "mine": xs[0][:1],
                             "columns": xs[0]})))
    dumped = {}

    class Orchestrator:
        emitter = types.SimpleNamespace(get_collector=_Timer)
        fs_config = types.SimpleNamespace(artifacts_output_directory_path=str(tmp_path))

        def _run_simulator_inference(self, k):
            return "one process"

        def __dump_tensors__(self, folder, tensors, name_fn):
            dumped[os.path.relpath(folder, str(tmp_path))] = {name_fn(k): v for k, v in tensors.items()}
    run = nkilib_plugin._ranks_inference(Orchestrator._run_simulator_inference, "infer_result")
    assert run(Orchestrator(), kut) == os.path.join(str(tmp_path), "infer_result")
    for r in range(2):
        outs = dumped[os.path.join("infer_result", "output_worker_%d" % r)]
        assert sorted(outs) == ["columns", "gathered", "mine", "total"]
        np.testing.assert_array_equal(outs["total"], xs[0] + xs[1])
        np.testing.assert_array_equal(outs["gathered"], np.concatenate(xs))
        np.testing.assert_array_equal(outs["mine"], xs[r][r:r + 1])
    kut.inference_args.collective_ranks = 1
    assert run(Orchestrator(), kut) == "one process"


def test_kvdp_check_gives_each_rank_its_golden_inputs():
    """nkilib_kvdp_check.py runs rank r's single-rank comparison on the
    inputs the suite gives rank r's golden: its weight slices, the whole
    batch's mask, KVDP=1, and (block KV) the cache updates of its own
    batches only."""
    import types
    import numpy as np
    check = load("nkilib_kvdp_check.py", "nkilib_kvdp_check")
    base = {"W_qkv": "all", "KVDP": 3, "kv_cache_update_idx": np.arange(6, dtype=np.uint32)}
    per_rank = types.SimpleNamespace(base_input=base)
    cache = {"w_qkv": ["q0", "q1", "q2"], "bias_qkv": [None] * 3, "w_out": ["o0", "o1", "o2"],
             "golden_mask": "mask"}
    cfg = types.SimpleNamespace(block_len=32)
    g = check._golden_inputs(None, per_rank, cache, cfg, 1, 2)
    assert (g["W_qkv"], g["W_out"], g["attention_mask"], g["KVDP"]) == ("q1", "o1", "mask", 1)
    skip = np.iinfo(np.uint32).max
    assert g["kv_cache_update_idx"].tolist() == [skip, skip, 2, 3, skip, skip]
    assert base["KVDP"] == 3 and base["kv_cache_update_idx"][0] == 0      # the test's own dict kept
    flat = check._golden_inputs(None, per_rank, cache, types.SimpleNamespace(block_len=0), 2, 2)
    assert flat["kv_cache_update_idx"].tolist() == list(range(6))


def test_tests_left_without_an_outcome_carry_how_the_session_ended():
    """A session that ends early (a crashed worker, an interrupt) leaves
    tests without an outcome: their cause quotes the session's last lines."""
    collected = ["test/integration/nkilib/core/mlp/test_a.py::t%d" % i for i in range(3)]
    outcomes = {collected[0]: {"outcome": "passed"}}
    output = "....\n\n[gw1] node down: Not properly terminated\nmaximum crashed workers reached: 4\n"
    ended = run_nkilib.session_end(output, lines=2)
    fam, causes = run_nkilib.summarize(collected, outcomes, [], None, ended)
    assert fam["core/mlp"]["failed"] == 2
    (kind, detail), tests = next(iter(causes.items()))
    assert kind == "not run" and tests == collected[1:]
    assert "node down: Not properly terminated | maximum crashed workers reached: 4" in detail
    assert run_nkilib.session_end("") == "no outcome reported (the session printed nothing)"


def test_a_test_whose_worker_died_fails_with_the_workers_last_words(tmp_path, monkeypatch):
    """xdist reports the test a worker died in with when '???'; the plugin
    records it, the runner finds what the worker printed as it died, and
    a death does not end the session."""
    results = tmp_path / "r.jsonl"
    monkeypatch.setenv("NKILIB_RESULTS", str(results))
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    import types
    tid = "test/integration/nkilib/core/mlp/test_a.py::t1"
    rep = types.SimpleNamespace(nodeid=tid, when="???", failed=True, passed=False, skipped=False,
                                longrepr="worker 'gw1' crashed while running '%s'" % tid)
    nkilib_plugin.pytest_runtest_logreport(rep)
    _, outcomes, _ = run_nkilib.load_results(str(results))
    assert outcomes[tid]["outcome"] == "failed" and outcomes[tid]["when"] == "crash"
    output = ("..[gw0] node down: Not properly terminated\n"
              "..Fatal Python error: Aborted\n\nThread 0x1 (most recent call first):\n"
              "  File \"x.py\", line 3 in f\n"
              "[gw1] node down: Not properly terminated\nF\n")
    assert run_nkilib.worker_deaths(output) == {"gw0": ["Not properly terminated"],
                                                "gw1": ["Fatal Python error: Aborted"]}
    run_nkilib.name_worker_deaths(outcomes, output)
    assert outcomes[tid]["cause"] == ["worker died", "Fatal Python error: Aborted"]
    cmd = run_nkilib.pytest_command(run_nkilib.parse_args(["/lib", "--workers", "2"]), "/c", "simulation")
    assert cmd[cmd.index("--max-worker-restart") + 1] == str(run_nkilib.MAX_WORKER_DEATHS)


def test_a_resumed_run_keeps_the_earlier_outcomes_and_runs_only_the_rest(tmp_path, monkeypatch):
    """--resume: the tests an earlier run gave an outcome are carried into
    the new results and deselected; those it left without one run again."""
    import json
    import types
    ids = ["test/integration/nkilib/core/mlp/test_a.py::t%d" % i for i in range(4)]
    earlier = tmp_path / "earlier.jsonl"
    with open(earlier, "w") as f:
        for t in ids:
            f.write(json.dumps({"test": t, "when": "collected"}) + "\n")
        f.write(json.dumps({"test": ids[0], "when": "call", "outcome": "passed"}) + "\n")
        f.write(json.dumps({"test": ids[1], "when": "call", "outcome": "failed",
                            "cause": ["wrong number", "x"]}) + "\n")
    results, done = tmp_path / "r.jsonl", tmp_path / "done.txt"
    assert run_nkilib.carry_over(str(earlier), str(results), str(done)) == 2
    args = run_nkilib.parse_args(["/lib", "--resume", str(earlier)])
    args.done = str(done)
    env = run_nkilib.suite_env("/c", str(results), None, "/py", args)
    monkeypatch.setenv("NKILIB_DONE", env["NKILIB_DONE"])
    items = [types.SimpleNamespace(nodeid=t) for t in ids]
    gone = []
    config = types.SimpleNamespace(hook=types.SimpleNamespace(
        pytest_deselected=lambda items: gone.extend(i.nodeid for i in items)))
    nkilib_plugin.pytest_collection_modifyitems(config, items)
    assert [i.nodeid for i in items] == ids[2:] and gone == ids[:2]
    with open(results, "a") as f:       # the new session: the other two
        for t in ids[2:]:
            f.write(json.dumps({"test": t, "when": "collected"}) + "\n")
        f.write(json.dumps({"test": ids[2], "when": "call", "outcome": "passed"}) + "\n")
    collected, outcomes, _ = run_nkilib.load_results(str(results))
    assert collected == ids[:2] + ids[2:]
    assert outcomes[ids[1]]["cause"] == ["wrong number", "x"] and ids[3] not in outcomes
    fam, _ = run_nkilib.summarize(collected, outcomes, [], None, "ended")
    assert (fam["core/mlp"]["passed"], fam["core/mlp"]["failed"]) == (2, 2)


def test_memory_bound_tests_run_again_on_one_worker_with_more_memory(tmp_path, monkeypatch):
    """--retry-memory: the tests that met the data limit or skipped
    themselves by their memory estimate (and only those) run again, on one
    worker with the larger limit, and their new outcomes count."""
    import json
    import types
    ids = ["test/integration/nkilib/core/moe/test_a.py::t%d" % i for i in range(4)]
    outcomes = {ids[0]: {"outcome": "passed"},
                ids[1]: {"outcome": "failed", "cause": ["memory limit", "Unable to allocate"]},
                ids[2]: {"outcome": "skipped", "reason": "Skipped: Estimated memory 9.5 GiB exceeds"},
                ids[3]: {"outcome": "failed", "cause": ["wrong number", "x"]}}
    seen = {}

    def fake_run_suite(args, copy, mode, results, collect_only=False, log_name=None):
        seen.update(workers=args.workers, mem_gib=args.mem_gib, log=log_name,
                    only=open(args.only).read().split(),
                    env=run_nkilib.suite_env(copy, results, None, "/py", args))
        with open(results, "w") as f:
            f.write(json.dumps({"test": ids[1], "when": "call", "outcome": "passed"}) + "\n")
            f.write(json.dumps({"test": ids[2], "when": "call", "outcome": "failed",
                                "cause": ["memory limit", "y"]}) + "\n")
        return 0, ""
    monkeypatch.setattr(run_nkilib, "run_suite", fake_run_suite)
    args = run_nkilib.parse_args(["/lib", "--workers", "2", "--mem-gib", "7", "--retry-memory", "20"])
    assert run_nkilib.retry_memory_bound(args, "/c", str(tmp_path), outcomes) == (2, 1)
    assert seen["workers"] == 1 and seen["mem_gib"] == 20 and seen["only"] == ids[1:3]
    assert seen["env"]["NKILIB_ONLY"] == str(tmp_path / "retry.txt") and seen["log"] == "retry"
    assert outcomes[ids[1]]["outcome"] == "passed" and outcomes[ids[1]]["retried"]
    assert outcomes[ids[3]]["cause"] == ["wrong number", "x"] and args.workers == 2
    monkeypatch.setenv("NKILIB_ONLY", seen["env"]["NKILIB_ONLY"])
    monkeypatch.delenv("NKILIB_DONE", raising=False)
    items = [types.SimpleNamespace(nodeid=t) for t in ids]
    config = types.SimpleNamespace(hook=types.SimpleNamespace(pytest_deselected=lambda items: None))
    nkilib_plugin.pytest_collection_modifyitems(config, items)
    assert [i.nodeid for i in items] == ids[1:3]
