"""NCHW vs NHWC plans of the same weights in one process: tuned kernel time of each, and cuDNN's best dense time
in each layout, so that a channel-last engine's cost of keeping the plugin in NHWC (no reformat) is visible.

    python3 bench/layout_ab.py [--layers bench/layers.json] [--only NAME ...] [--sparsity 0.9]
        [--dtype fp32 fp16] [--batch 1] [--json OUT.json]

Per case: two plans (NCHW, NHWC) of the same seeded weights, each tuned on its own buffers (tsc_plan_tune), then
both tuned enqueues timed interleaved (A, B, A, B; best of each) with CUDA-graph replays (bench/variant_times.py's
timer). The NHWC output is checked against the NCHW output (norm-relative error). Also timed: a torch
NCHW <-> NHWC permute of the input and of the output (what a reformat around an NCHW-only plugin costs, roughly).
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
from variant_times import _time_us, seeded_cases  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "layers.json"))
    ap.add_argument("--only", nargs="+")
    ap.add_argument("--sparsity", type=float, nargs="+", default=[0.9])
    ap.add_argument("--dtype", nargs="+", default=["fp32", "fp16"])
    ap.add_argument("--batch", type=int, nargs="+", default=[1])
    ap.add_argument("--json")
    a = ap.parse_args()
    rows = []
    for lay, batch, dtype, sp, _, sw in seeded_cases(a):
        tdt = torch.float16 if dtype == "fp16" else torch.float32
        x = torch.randn(batch, lay["C"], lay["H"], lay["W"], device="cuda").to(tdt)
        xh = x.permute(0, 2, 3, 1).contiguous()
        pa, pb = layer_plan(sw, lay, dtype, "NCHW"), layer_plan(sw, lay, dtype, "NHWC")
        ya = torch.empty(pa.output_shape(tuple(x.shape)), device="cuda", dtype=tdt)
        yb = torch.empty(pb.output_shape(tuple(xh.shape)), device="cuda", dtype=tdt)
        pa.tune(x, ya)
        pb.tune(xh, yb)
        ta = tb = 1e30
        for _rep in range(2):
            ta = min(ta, _time_us(lambda: pa.enqueue(x, ya)))
            tb = min(tb, _time_us(lambda: pb.enqueue(xh, yb)))
        pa.enqueue(x, ya)
        pb.enqueue(xh, yb)
        torch.cuda.synchronize()
        ref = ya.double()
        err = float((yb.permute(0, 3, 1, 2).double() - ref).norm() / max(ref.norm().item(), 1e-30))
        t_perm = _time_us(lambda: xh.copy_(x.permute(0, 2, 3, 1))) + \
            _time_us(lambda: ya.copy_(yb.permute(0, 3, 1, 2)))
        row = {"layer": lay["name"], "batch": batch, "dtype": dtype, "sparsity": sp,
               "nchw_us": ta, "nhwc_us": tb, "nhwc_over_nchw": tb / ta, "rel_err_nhwc_vs_nchw": err,
               "permute_in_out_us": t_perm,
               "describe_nchw": pa.describe(), "describe_nhwc": pb.describe()}
        rows.append(row)
        print("{:28s} N={} {} {:.2f}: NCHW {:8.2f} us  NHWC {:8.2f} us  NHWC/NCHW x{:.3f}  "
              "err {:.1e}  permutes {:6.2f} us".format(lay["name"], batch, dtype, sp, ta, tb, tb / ta,
                                                      err, t_perm), flush=True)
        pa.close()
        pb.close()
    gm = math.exp(sum(math.log(r["nhwc_over_nchw"]) for r in rows) / len(rows)) if rows else float("nan")
    print("geomean NHWC/NCHW time over {} cases: x{:.3f}".format(len(rows), gm))
    if a.json:
        meta = make_meta(device=torch.cuda.get_device_name())
        doc = {"meta": meta, "geomean_nhwc_over_nchw": gm, "results": rows}
        _atomic_write(a.json, json.dumps(doc, indent=1) + "\n")


if __name__ == "__main__":
    main()
