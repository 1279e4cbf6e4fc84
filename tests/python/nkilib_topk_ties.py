"""nkilib_topk_ties.py: for failing tests of the NKI Library's MoE block
(core/moe_block, test_moe_block_kernel_model), whose artifacts a run of
run_nkilib.py kept (--keep --keep-artifacts), lists the tokens whose
output is off (largest difference over 5% of the token's largest golden
value) and the tokens whose bf16 router logits tie at the top-k boundary
(the k-th and (k+1)-th largest equal).

    /usr/bin/python3 tests/python/nkilib_topk_ties.py COPY/neuron_test_output/out-*

The test's torch reference ranks the bf16 logits with an unstable
argsort, so at a tie either expert may be chosen: a token that is off
only where its logits tie is the test's coin flip, not a wrong number."""
import sys

import numpy as np


def bf16_to_f32(u):
    return (u.astype(np.uint32) << 16).view(np.float32)


def tokens(art):
    """(tokens off, tokens tied at the top-k boundary) of one artifact dir."""
    k = int(art.split("_tk_")[1].split("_")[0])
    res = art.rstrip("/") + "/infer_result/"
    logits = bf16_to_f32(np.fromfile(res + "router_logits.bin", np.uint16))
    t = logits.size // int(art.split("_ge_")[1].split("_")[0])
    logits = logits.reshape(t, -1)
    out = bf16_to_f32(np.fromfile(res + "out.bin", np.uint16)).reshape(t, -1)
    gold = np.fromfile(res + "golden-out.bin", np.float32).reshape(t, -1)
    off = np.abs(out - gold).max(axis=1) > 0.05 * np.abs(gold).max(axis=1)
    ranked = -np.sort(-logits, axis=1)
    tied = ranked[:, k - 1] == ranked[:, k]
    return list(np.where(off)[0]), list(np.where(tied)[0])


def main(arts):
    for art in arts:
        off, tied = tokens(art)
        print("%s: %d token(s) off %s, tied %s, off without a tie %s"
              % (art.rstrip("/").split("/")[-1][:90], len(off), off, tied,
                 sorted(set(off) - set(tied))))


if __name__ == "__main__":
    main(sys.argv[1:])
