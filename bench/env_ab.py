"""A/B of a plan-creation environment switch in one process (e.g. TRT_SPARSE_NO_TMA=1: TMA vs cp.async staging).

    python3 bench/env_ab.py --env TRT_SPARSE_NO_TMA=1 [--layers bench/layers.json] [--only NAME ...]
        [--sparsity 0.9] [--dtype fp32 fp16] [--batch 1 8] [--family smem [mma_phase ..]] [--top 3] [--pattern vector:16]
        [--json OUT.json]

Per case, two plans of the same seeded weights are created: A without the variable, B with it. Every variant of
`--family` is timed on its plan, then the `--top` fastest of each plan (matched by name: a switch may add or
remove candidates) are timed again on every plan that has them, interleaved (A, B, A, B; best of each), with
CUDA-graph replays (bench/variant_times.py's timer). Prints and writes per case
the best time of A and B and B / A (> 1: A faster), and the geometric mean over the cases. cuDNN is not involved.
"""
import argparse
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import torch  # noqa: E402

from trt_sparse.bench_report import make_meta  # noqa: E402
from trt_sparse.commands.bench_kernels_cmd import _atomic_write, layer_plan  # noqa: E402
from variant_times import _time_us, family, seeded_cases  # noqa: E402


def _plan(sw, lay, dtype, env_name, env_value):
    """Plan of the layer, created with env_name set to env_value (None: unset)."""
    old = os.environ.pop(env_name, None)
    try:
        if env_value is not None:
            os.environ[env_name] = env_value
        return layer_plan(sw, lay, dtype)
    finally:
        os.environ.pop(env_name, None)
        if old is not None:
            os.environ[env_name] = old


def _family_timed(plan, names, families, x, y):
    """{name: index} of the plan's variants (`names`, its variant list) of the families, and [(first time, name)]
    sorted (fastest first)."""
    idx = {n: i for i, n in enumerate(names) if family(n) in families}
    return idx, sorted((_time_us(lambda: plan.enqueue_variant(i, x, y)), n) for n, i in idx.items())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--env", required=True, metavar="NAME=VALUE", help="set for plan B only")
    ap.add_argument("--layers", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "layers.json"))
    ap.add_argument("--only", nargs="+")
    ap.add_argument("--sparsity", type=float, nargs="+", default=[0.9])
    ap.add_argument("--dtype", nargs="+", default=["fp32", "fp16"])
    ap.add_argument("--batch", type=int, nargs="+", default=[1])
    ap.add_argument("--family", nargs="+", default=["smem"],
                    help="variant families timed (bench/variant_times.py's family(): e.g. mma mma_phase)")
    ap.add_argument("--top", type=int, default=3)
    ap.add_argument("--pattern", default="unstructured", help="unstructured or vector:V (prune --pattern)")
    ap.add_argument("--json")
    a = ap.parse_args()
    from trt_sparse.prune import parse_pattern
    vec = parse_pattern(a.pattern)
    env_name, _, env_value = a.env.partition("=")
    rows = []
    for lay, batch, dtype, sp, _, sw in seeded_cases(a, vec):
        pa, pb = _plan(sw, lay, dtype, env_name, None), _plan(sw, lay, dtype, env_name, env_value)
        tdt = torch.float16 if dtype == "fp16" else torch.float32
        x = torch.randn(batch, lay["C"], lay["H"], lay["W"], device="cuda").to(tdt)
        y = torch.empty(pa.output_shape(tuple(x.shape)), device="cuda", dtype=tdt)
        # variants by name per plan: a switch may change the candidate list (e.g. leave configs out), so
        # indices differ between the plans; a variant is timed only on the plan(s) that have it
        # a switch that adds or removes candidates only outside the timed families cannot show in this A/B (round 19's
        # phase-row A/B timed `--family mma` while the switch removed `mma_phase` variants): say so per case
        names_a = pa.variants(batch, lay["H"], lay["W"])
        names_b = pb.variants(batch, lay["H"], lay["W"])
        untimed = sorted(n for n in set(names_a) ^ set(names_b) if family(n) not in a.family)
        if untimed:
            print("WARNING {} N={}: the switch changes {} candidate(s) outside --family {} (e.g. {}): add their "
                  "family".format(lay["name"], batch, len(untimed), " ".join(a.family), untimed[0]), flush=True)
        idx_a, first_a = _family_timed(pa, names_a, a.family, x, y)
        idx_b, first_b = _family_timed(pb, names_b, a.family, x, y)
        if not idx_a or not idx_b:
            continue
        picked = list(dict.fromkeys([n for _, n in first_b[:a.top]] + [n for _, n in first_a[:a.top]]))
        ta, tb = {}, {}
        for n in picked:
            for _rep in range(2):
                if n in idx_a:
                    t = _time_us(lambda: pa.enqueue_variant(idx_a[n], x, y))
                    ta[n] = min(ta.get(n, t), t)
                if n in idx_b:
                    t = _time_us(lambda: pb.enqueue_variant(idx_b[n], x, y))
                    tb[n] = min(tb.get(n, t), t)
        best_a, best_b = min(ta.values()), min(tb.values())
        row = {"layer": lay["name"], "batch": batch, "dtype": dtype, "sparsity": sp, "pattern": a.pattern,
               "a_us": ta, "b_us": tb, "best_a_us": best_a, "best_b_us": best_b,
               "b_over_a": best_b / best_a, "describe_a": pa.describe(), "describe_b": pb.describe(),
               "untimed_changed_candidates": untimed}
        rows.append(row)
        print("{:28s} N={} {} {:.2f}: A {:8.2f} us  B {:8.2f} us  B/A x{:.3f}  ({})".format(
            lay["name"], batch, dtype, sp, best_a, best_b, best_b / best_a,
            min(ta, key=ta.get)), flush=True)
        pa.close()
        pb.close()
    gm = math.exp(sum(math.log(r["b_over_a"]) for r in rows) / len(rows)) if rows else float("nan")
    print("geomean B/A over {} cases: x{:.3f} (A: {} unset, B: {})".format(len(rows), gm, env_name, a.env))
    if a.json:
        meta = make_meta(device=torch.cuda.get_device_name(), env_b=a.env, family=a.family, top=a.top)
        doc = {"meta": meta, "geomean_b_over_a": gm, "results": rows}
        _atomic_write(a.json, json.dumps(doc, indent=1) + "\n")


if __name__ == "__main__":
    main()
