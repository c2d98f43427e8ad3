"""What tensor-core issue rate a speedup target needs, from a `trt-sparse bench-kernels` JSON (e.g.
bench/results/h200_round17_full.json): per case of the dtype, the mma work a kernel issues over unions of G
channels' positions (uniform random masks: a position is in the union with probability 1 - s^G) and the rate
(TFLOP/s of issued mma, zeros included) it would need to run `--target` times faster than the dense baseline of the
same run (fp16: cuDNN's best fp16; fp32: cuDNN's best with TF32 allowed, i.e. TF32 mma for fp32 I/O), next to the
rate the measured sparse time implies for 16-channel unions.

    python3 bench/mma_needed_rate.py bench/results/h200_round17_full.json [--dtype fp16] [--target 1.5]
        [--groups 16 8] [--kernel 3] [--stride 1]
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from trt_sparse.reference import conv_output_size  # noqa: E402


def union_fraction(sparsity, group):
    """Expected fraction of the C x R x S positions any of `group` channels uses, at uniform random `sparsity`."""
    return 1.0 - sparsity ** group


def issued_gflop(lay, batch, sparsity, group):
    """GFLOP of mma a union-of-`group`-channels kernel issues for the layer (2 per product, zero weights included)."""
    k, st, pd, dl = lay["kernel"], lay["stride"], lay["pad"], lay["dilation"]
    p, q = conv_output_size(lay["H"], lay["W"], k, k, (st, st), (pd,) * 4, (dl, dl))
    return 2.0 * lay["K"] * lay["C"] * k * k * p * q * batch * union_fraction(sparsity, group) / 1e9


DENSE_KEY = {"fp16": "fp16_best", "fp32": "tf32_best"}  # the baseline a user gets (torch / TensorRT defaults)


def needed_rows(results, target, groups, kernel=3, stride=1, dtype="fp16"):
    """Per unstructured case of the dtype, kernel size and stride: (layer, batch, sparsity, dense best us, sparse us,
    {group: TFLOP/s needed for `target` x dense}, TFLOP/s the sparse time implies for 16-channel unions)."""
    rows = []
    for r in results:
        lay = r["layer"]
        if r["dtype"] != dtype or r.get("pattern", "unstructured") != "unstructured":
            continue
        if lay["kernel"] != kernel or lay["stride"] != stride or r.get("allow_tf32"):
            continue
        dense = r["dense_us"][DENSE_KEY[dtype]]
        t_us = dense / target
        need = {g: issued_gflop(lay, r["batch"], r["sparsity"], g) / t_us * 1e3 for g in groups}  # GFLOP/us -> TFLOP/s
        have = issued_gflop(lay, r["batch"], r["sparsity"], 16) / r["sparse_us"] * 1e3
        rows.append((lay["name"], r["batch"], r["sparsity"], dense, r["sparse_us"], need, have))
    return sorted(rows, key=lambda t: (t[1], t[2], t[0]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("json")
    ap.add_argument("--dtype", choices=sorted(DENSE_KEY), default="fp16")
    ap.add_argument("--target", type=float, default=1.5, help="speedup over the dense baseline (DENSE_KEY)")
    ap.add_argument("--groups", type=int, nargs="+", default=[16, 8], help="channels per union (16: today's kernels)")
    ap.add_argument("--kernel", type=int, default=3)
    ap.add_argument("--stride", type=int, default=1)
    a = ap.parse_args()
    with open(a.json) as f:
        results = json.load(f)["results"]
    print("{:28s} {:>2s} {:>5s} {:>9s} {:>9s} {}  {:>10s}".format(
        "layer", "N", "sp", "dense us", "sparse us", "  ".join("need G={:<3d}".format(g) for g in a.groups),
        "issued now"))
    for name, batch, sp, dense, sparse, need, have in needed_rows(results, a.target, a.groups, a.kernel, a.stride,
                                                                  a.dtype):
        print("{:28s} {:2d} {:5.2f} {:9.2f} {:9.2f} {}  {:10.0f}".format(
            name, batch, sp, dense, sparse, "  ".join("{:10.0f}".format(need[g]) for g in a.groups), have))
    print("(TFLOP/s of issued mma: 2 x products over the union positions, zeros included)")


if __name__ == "__main__":
    main()
