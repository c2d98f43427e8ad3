"""Split a kernel's executed instructions into a per-useful-FMA loop and a fixed part (staging, set-up,
epilogue), from Nsight Compute runs of the same layer and variant at two or more sparsities.

    python3 bench/ncu_loop_split.py LAYER --dtype fp16 [--batch 1] [--pattern unstructured] SP=NCU.txt SP=NCU.txt ...

Each NCU.txt is an `ncu` details page (the `ncu-h2` / `ncu-reuse` / `ncu-src` stages of tools/device_kernels.sh
write them) of `bench/profile_layer.py LAYER --sparsity SP ...`; the useful FMAs are recomputed from the same seeded
weights profile_layer uses (nonzeros x N x P x Q). A least-squares line instructions = fixed + loop x FMAs through
the points gives the loop cost (thread instructions per useful FMA) and the fixed part (warp instructions); with
the same variant at every sparsity this is what round 17 used to show the half2 smem kernel staging-bound.
"""
import argparse
import os
import re
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from trt_sparse.commands.bench_kernels_cmd import _pruned_weight, load_layers  # noqa: E402
from trt_sparse.prune import parse_pattern  # noqa: E402

_INSTR = re.compile(r"^\s*Executed Instructions\s+inst\s+([\d,]+)\s*$", re.M)
_DURATION = re.compile(r"^\s*Duration\s+(us|ms|ns)\s+([\d.,]+)\s*$", re.M)


def parse_ncu_details(text):
    """(executed warp instructions, duration in us or None) of the first kernel in an ncu details page."""
    m = _INSTR.search(text)
    if not m:
        raise ValueError("no 'Executed Instructions' line (run ncu with --section InstructionStats or --set full)")
    d = _DURATION.search(text)
    dur = None
    if d:
        dur = float(d.group(2).replace(",", "")) * {"ns": 1e-3, "us": 1.0, "ms": 1e3}[d.group(1)]
    return int(m.group(1).replace(",", "")), dur


def useful_fmas(lay, sparsity, batch, vec=1):
    """Useful FMAs of the layer with profile_layer's seeded weights (rng seed 0): nonzeros x N x P x Q."""
    w, _ = _pruned_weight(np.random.default_rng(0), lay, sparsity, vec)
    k, st, pd = lay["kernel"], lay["stride"], lay["pad"]
    p = (lay["H"] + 2 * pd - k) // st + 1
    q = (lay["W"] + 2 * pd - k) // st + 1
    return int(np.count_nonzero(w)) * batch * p * q


def fit_split(points):
    """points: [(useful FMAs, warp instructions), ...] (>= 2 distinct FMA counts). Returns (loop thread instructions
    per FMA, fixed warp instructions) of the least-squares line through them."""
    f = np.array([p[0] for p in points], dtype=np.float64)
    i = np.array([p[1] for p in points], dtype=np.float64)
    if len(set(f.tolist())) < 2:
        raise ValueError("need runs at two or more different sparsities")
    slope, fixed = np.polyfit(f, i, 1)
    return 32.0 * slope, fixed


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("layer")
    ap.add_argument("runs", nargs="+", metavar="SP=NCU.txt", help="sparsity and the ncu details page of that run")
    ap.add_argument("--layers", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "layers.json"))
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--pattern", default="unstructured", help="unstructured or vector:V (as profiled)")
    a = ap.parse_args(argv)
    lays = [l for l in load_layers(a.layers) if l["name"] == a.layer]
    if not lays:
        ap.error("no layer {!r} in {}".format(a.layer, a.layers))
    vec = parse_pattern(a.pattern)
    runs = []  # (sparsity label, useful FMAs, warp instructions)
    for spec in a.runs:
        sp, sep, path = spec.partition("=")
        if not sep:
            ap.error("run {!r}: expected SP=NCU.txt".format(spec))
        with open(path) as fh:
            instr, dur = parse_ncu_details(fh.read())
        fmas = useful_fmas(lays[0], float(sp), a.batch, vec)
        runs.append((sp, fmas, instr))
        print("sparsity {:<6} useful FMAs {:>13,}  warp instructions {:>12,}  {:.2f} thread instr / FMA{}".format(
            sp, fmas, instr, 32.0 * instr / max(fmas, 1), "  ({:.1f} us under ncu)".format(dur) if dur else ""))
    loop, fixed = fit_split([(fmas, instr) for _, fmas, instr in runs])
    print("loop: {:.2f} thread instructions per useful FMA; fixed part: {:,.0f} warp instructions".format(loop, fixed))
    for sp, _, instr in runs:
        print("  {}: fixed part {:.0%} of the instructions".format(sp, fixed / instr))


if __name__ == "__main__":
    main()
