"""Time every kernel variant of a few benchmark layers in one process (CUDA-graph replays, best of 5).

    python3 bench/variant_times.py [--layers bench/layers.json] [--only NAME ...] [--sparsity 0.9 0.95]
        [--dtype fp32 fp16] [--batch 1] [--family reuse] [--pattern vector:16] [--json OUT.json]
        [--compare OLD.json]   (old / new time per variant family, same seeded weights)

Prints, per case, the fastest variant of each family (generic, generic4, tile, smem, reuse) so that a new
variant is compared with the old ones in the same process (cuDNN is not involved).
"""
import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import torch  # noqa: E402

from trt_sparse.commands.bench_kernels_cmd import _atomic_write, _pruned_weight, layer_plan, load_layers  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from variant_rows import case_key, compare_rows, family  # noqa: E402,F401  (env_ab / layout_ab import them from here)


def _time_us(fn, iters=20, trials=5):
    """Best-of-trials time of fn() in microseconds: `iters` launches captured in one CUDA graph (no
    Python/ctypes launch overhead in the timed region), replayed `trials` times after a warm-up."""
    fn()  # builds the variant's layout (allocates) outside the capture
    torch.cuda.synchronize()
    s = torch.cuda.Stream()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, stream=s):
        for _ in range(iters):
            fn()
    g.replay()
    torch.cuda.synchronize()
    best = 1e30
    for _ in range(trials):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        best = min(best, a.elapsed_time(b) * 1000.0 / iters)
    return best


def seeded_cases(a, vec=1):
    """(layer, batch, dtype, sparsity, dense weight, sparse weight) for every case that the bench scripts' common
    arguments select (a.layers, a.only, a.batch, a.dtype, a.sparsity), with the weights seeded per sparsity as
    `bench-kernels` seeds them (so every script and round times the same weights)."""
    layers = [l for l in load_layers(a.layers) if not a.only or l["name"] in a.only]
    for lay in layers:
        for batch in a.batch:
            for dtype in a.dtype:
                for sp in a.sparsity:
                    rng = np.random.default_rng([0, int(round(sp * 1000))])
                    w, sw = _pruned_weight(rng, lay, sp, vec)
                    yield lay, batch, dtype, sp, w, sw


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "layers.json"))
    ap.add_argument("--only", nargs="+")
    ap.add_argument("--sparsity", type=float, nargs="+", default=[0.9, 0.95])
    ap.add_argument("--dtype", nargs="+", default=["fp32"])
    ap.add_argument("--batch", type=int, nargs="+", default=[1])
    ap.add_argument("--json")
    ap.add_argument("--family", default="reuse", help="variant family compared with the best of the others")
    ap.add_argument("--pattern", default="unstructured", help="unstructured or vector:V (prune --pattern)")
    ap.add_argument("--allow-tf32", action="store_true", help="fp32 plans also list TF32 tensor-core variants")
    ap.add_argument("--compare", metavar="OLD.json", help="an earlier --json of this script: print old / new per family")
    a = ap.parse_args()
    old_rows = []
    if a.compare:
        with open(a.compare) as f:
            old_rows = json.load(f)
    from trt_sparse.prune import parse_pattern
    vec = parse_pattern(a.pattern)
    out = []
    for lay, batch, dtype, sp, w, sw in seeded_cases(a, vec):
        plan = layer_plan(sw, lay, dtype, allow_tf32=a.allow_tf32 and dtype == "fp32")
        tdt = torch.float16 if dtype == "fp16" else torch.float32
        x = torch.randn(batch, lay["C"], lay["H"], lay["W"], device="cuda").to(tdt)
        y = torch.empty(plan.output_shape(tuple(x.shape)), device="cuda", dtype=tdt)
        names = plan.variants(batch, lay["H"], lay["W"])
        times = {}
        for i, n in enumerate(names):
            times[n] = _time_us(lambda: plan.enqueue_variant(i, x, y))
        best = {}
        for n, t in times.items():
            f = family(n)
            if f not in best or t < best[f][1]:
                best[f] = (n, t)
        newfam = a.family
        old = min((t for n, t in times.items() if family(n) != newfam), default=None)
        new = best.get(newfam, (None, None))[1]
        print("{:28s} N={} {} {:.2f}: old best {:8.2f} us  {} {:8.2f} us  ({})  x{:.2f}".format(
            lay["name"], batch, dtype, sp, old, newfam, new or -1, best.get(newfam, ("-",))[0],
            (old / new) if new else 0.0), flush=True)
        out.append({"layer": lay["name"], "batch": batch, "dtype": dtype, "sparsity": sp, "pattern": a.pattern,
                    "times_us": times, "best_per_family": best})
        if old_rows:
            cmp = compare_rows(old_rows, out[-1])
            print("    vs {}: {}".format(os.path.basename(a.compare), "  ".join(
                "{} {:.2f} -> {:.2f} us (x{:.2f})".format(f, o, n, r) for f, (o, n, r) in sorted(cmp.items()))
                or "case not in the file"), flush=True)
        plan.close()
    if a.json:
        _atomic_write(a.json, json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
