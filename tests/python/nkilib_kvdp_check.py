"""nkilib_kvdp_check.py: checks the multi-rank path of one KV-data-parallel
test of the NKI Library's attention block (experimental/transformer,
test_attention_block_tkg.py, a config with KVDP > 1) apart from its numerics.

    /usr/bin/python3 tests/python/nkilib_kvdp_check.py /path/to/nki-library TEST_ID [RANK ...]

TEST_ID is the test's parameter id (MODEL_WIP_..._<fields>, as pytest shows
it between the brackets of test_attn_blk_model), or "cfg:" followed by an
AttnBlkTestConfig(...) expression (for a config of test_attn_blk_megakernel).
It builds the inputs as the test does, runs the kernel on its KVDP trnemu
ranks (kernel.ranks), then, for each rank asked (all by default), runs the
same kernel on one rank with KVDP=1 and the inputs the test gives that
rank's torch golden (the rank's W_qkv/W_out slice, the whole batch and KV
cache), and prints, per output, how rank r's result compares with that
single-rank run and with the golden. A result equal to the single-rank run
(or within a rounding of it) puts a failing validation on the kernel's
single-rank numerics, not on the all_gather / rank_id slicing between the
ranks. The library copy is made as run_nkilib.py makes it (the checkout is
never written).
"""
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TEST_MODULE = "test.integration.nkilib.experimental.transformer.test_attention_block_tkg"


def _cos(a, b):
    import numpy as np
    a = np.asarray(a, np.float64).ravel()
    b = np.asarray(b, np.float64).ravel()
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b) + 1e-30))


def _config(arg):
    """The AttnBlkTestConfig a TEST_ID names."""
    if arg.startswith("cfg:"):
        import nki.language as nl  # noqa: F401 (names the expression may use)
        from nkilib_src.nkilib.core.utils.common_types import QuantizationType  # noqa: F401
        from test.integration.nkilib.experimental.transformer.test_attention_block_tkg_utils import (  # noqa: F401
            AttnBlkTestConfig, KVScaleTest)
        return eval(arg[4:])
    from test.integration.nkilib.experimental.transformer.test_attention_block_tkg_model_config import (
        attention_block_tkg_model_configs)
    from test.utils.common_dataclasses import prepare_model_parametrize
    params, ids = prepare_model_parametrize(attention_block_tkg_model_configs,
                                            id_formatter=lambda p: p.test_id())
    if arg not in ids:
        sys.exit("nkilib_kvdp_check: no model config has the id %s" % arg)
    return params[ids.index(arg)]


def _golden_inputs(t, per_rank, cache, cfg, r, b_attn):
    """The inputs the test gives rank r's torch golden (KVDP=1)."""
    import numpy as np
    g = per_rank.base_input.copy()
    g["W_qkv"], g["bias_qkv"], g["W_out"] = cache["w_qkv"][r], cache["bias_qkv"][r], cache["w_out"][r]
    g["attention_mask"] = cache["golden_mask"]
    g["KVDP"] = 1
    if cfg.block_len > 0:
        idx = g["kv_cache_update_idx"].copy()
        idx[: r * b_attn] = np.iinfo(np.uint32).max
        idx[(r + 1) * b_attn:] = np.iinfo(np.uint32).max
        g["kv_cache_update_idx"] = idx
    return g


def _report(name, ranked, single, golden):
    import numpy as np
    a, b, c = (np.asarray(x, np.float32) for x in (ranked, single, golden))
    print("  %-8s vs single rank: %s (max |diff| %.3g, %d of %d differ); cosine vs golden: "
          "ranks %.6f, single rank %.6f"
          % (name, "same bits" if np.array_equal(a, b) else "differs", float(np.abs(a - b).max()),
             int((a != b).sum()), a.size, _cos(a, c), _cos(b, c)))


def check(arg, only):
    """Runs in the prepared copy's environment (see main)."""
    import copy
    from dataclasses import replace
    import importlib
    import nki
    import torch_compat
    torch_compat.install()
    t = importlib.import_module(TEST_MODULE)
    cfg = _config(arg)
    if cfg.KVDP < 2:
        sys.exit("nkilib_kvdp_check: %s has KVDP=%d (one rank)" % (arg, cfg.KVDP))
    b_attn = cfg.batch // cfg.KVDP
    inputs = t.generate_kernel_inputs(replace(cfg, q_heads=cfg.KVDP * cfg.q_heads))
    per_rank, cache = t._create_per_rank_inputs(inputs, cfg.KVDP, cfg.q_heads, cfg.d_head, b_attn,
                                                cfg.S_tkg, cfg.S_ctx, cfg.block_len)
    sim = nki.cpu_simulate(nki.jit(t.attention_block_tkg_kernel_test_wrapper))[cfg.lnc]
    outs = sim.ranks([copy.deepcopy(dict(per_rank.for_rank(r))) for r in range(cfg.KVDP)])
    for r in (only or range(cfg.KVDP)):
        g = _golden_inputs(t, per_rank, cache, cfg, r, b_attn)
        golden = t._golden_ref_via_torch(copy.deepcopy(g), cfg.lnc)
        single = sim(**copy.deepcopy(g))
        print("rank %d of %d:" % (r, cfg.KVDP))
        _report("X_out", outs[r][0], single[0], golden["X_out"])
        if cfg.update_cache:
            def sliced(d):
                return t._slice_golden_KV_cache_for_rank(d, r, b_attn, cfg.block_len, cfg.d_head,
                                                         cfg.S_ctx, cache, True)
            s = sliced({"X_out": single[0], "K_cache_updated": single[1], "V_cache_updated": single[2]})
            gs = sliced(dict(golden))
            for i, name in ((1, "K_cache"), (2, "V_cache")):
                _report(name, outs[r][i], s[name + "_updated"], gs[name + "_updated"])


def main(argv):
    if len(argv) >= 2 and argv[0] == "--in-copy":
        check(argv[1], [int(x) for x in argv[2:]])
        return 0
    if len(argv) < 2:
        sys.exit(__doc__)
    sys.path.insert(0, HERE)
    import run_nkilib
    env_instance = "nkilib-kvdp-%d" % os.getpid()
    root, rest = os.path.abspath(argv[0]), argv[1:]
    tmp = tempfile.mkdtemp(prefix="nkilib-kvdp-")
    try:
        copy_dir = os.path.join(tmp, "nki-library")
        run_nkilib.copy_checkout(root, copy_dir)
        libnrt = os.environ.get("TRNEMU_LIBNRT") or os.path.join(run_nkilib.REPO, "build", "shims",
                                                                 "libnrt.so.1")
        env = run_nkilib.suite_env(copy_dir, os.path.join(tmp, "results.jsonl"), libnrt,
                                   run_nkilib.TRNEMU_PY)
        env["NKI_NC_VERSION"] = "gen3"          # the suite's trn2
        env["TRNEMU_INSTANCE_NAME"] = env_instance
        return subprocess.call([sys.executable, os.path.abspath(__file__), "--in-copy"] + rest,
                               cwd=copy_dir, env=env)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
