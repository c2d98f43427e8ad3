"""Run one benchmark layer with one kernel variant (for ncu / compute-sanitizer); no timing.

    python3 bench/profile_layer.py LAYER_NAME [--sparsity 0.9] [--dtype fp32] [--batch 1] [--variant best|INDEX|NAME]
        [--pattern unstructured|vector:V]
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import torch  # noqa: E402

from trt_sparse import cuda as tcuda  # noqa: E402
from trt_sparse.commands.bench_kernels_cmd import _pruned_weight, load_layers  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("layer")
    ap.add_argument("--layers", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "layers.json"))
    ap.add_argument("--sparsity", type=float, default=0.9)
    ap.add_argument("--dtype", default="fp32")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--variant", default="best")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--pattern", default="unstructured", help="unstructured or vector:V (prune --pattern)")
    a = ap.parse_args()
    lay = [l for l in load_layers(a.layers) if l["name"] == a.layer][0]
    rng = np.random.default_rng(0)
    from trt_sparse.prune import parse_pattern
    w, sw = _pruned_weight(rng, lay, a.sparsity, parse_pattern(a.pattern))
    st, pd = lay["stride"], lay["pad"]
    plan = tcuda.SparseConvPlan(sw, None, (st, st), (pd,) * 4, (1, 1), 0, 0.0, 6.0, a.dtype)
    tdt = torch.float16 if a.dtype == "fp16" else torch.float32
    x = torch.randn(a.batch, lay["C"], lay["H"], lay["W"], device="cuda").to(tdt)
    y = torch.empty(plan.output_shape(tuple(x.shape)), device="cuda", dtype=tdt)
    names = plan.variants(a.batch, lay["H"], lay["W"])
    if a.variant == "best":
        plan.tune(x, y)
        d = plan.describe()
        idx = names.index(d.split("]=")[-1])
    elif a.variant.isdigit():
        idx = int(a.variant)
    else:  # a variant name as printed by plan.variants()
        if a.variant not in names:
            sys.exit("no variant {!r}; variants: {}".format(a.variant, ", ".join(names)))
        idx = names.index(a.variant)
    print("variant", idx, names[idx], flush=True)
    for _ in range(a.runs):
        plan.enqueue_variant(idx, x, y)
    torch.cuda.synchronize()


if __name__ == "__main__":
    main()
