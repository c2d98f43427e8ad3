"""CPU estimate: how much would regrouping output channels by mask similarity shrink the tensor-core union?

The fp16 / TF32 mma kernel multiplies, per group of 16 output channels, every (c, r, s) position that any of the
16 uses (the union). Natural order groups channels 0-15, 16-31, ...; a permutation could group channels whose
masks overlap. This prints the mean union fraction of natural groups and of a greedy grouping (seed: the densest
remaining row; then add the row that adds the fewest new positions) for uniform random masks, or for the Conv
weights of an ONNX model (`--onnx FILE`, every Conv with a 4-D initializer weight).

    python3 bench/probes/union_grouping.py [--onnx model.onnx] [--seed 0]
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from trt_sparse.cost_model import TC_GROUP as GROUP, measured_union_fraction  # noqa: E402


def union_fraction(mask, groups):
    """Mean over groups of the share of positions any row of the group uses."""
    return float(np.mean([mask[g].any(0).mean() for g in groups]))


def greedy_groups(mask):
    """Groups of GROUP rows built greedily: densest remaining row first, then the row adding the fewest positions."""
    rows = mask.astype(np.int32)
    left = list(range(mask.shape[0]))
    groups = []
    while left:
        idx = np.array(left)
        seed = int(idx[np.argmax(rows[idx].sum(1))])
        left.remove(seed)
        group, used = [seed], mask[seed].copy()
        while len(group) < GROUP and left:
            idx = np.array(left)
            j = int(idx[np.argmin((rows[idx] & ~used).sum(1))])
            left.remove(j)
            group.append(j)
            used |= mask[j]
        groups.append(group)
    return groups


def report(name, mask):
    nat = measured_union_fraction(mask)  # natural order: what the kernels and the cost model use
    gre = union_fraction(mask, greedy_groups(mask))
    print("{:40s} K={:5d} density {:.3f}: union natural {:.3f}, greedy {:.3f} ({:.2f}x fewer positions)".format(
        name, mask.shape[0], mask.mean(), nat, gre, nat / gre if gre else float("nan")))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--onnx", help="report the Conv weights of this model instead of random masks")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    if a.onnx:
        import onnx
        from onnx import numpy_helper
        model = onnx.load(a.onnx)
        inits = {t.name: t for t in model.graph.initializer}
        for node in model.graph.node:
            if node.op_type == "Conv" and len(node.input) > 1 and node.input[1] in inits:
                w = numpy_helper.to_array(inits[node.input[1]])
                if w.ndim == 4 and w.shape[0] >= GROUP:
                    report(node.name or node.input[1], w.reshape(w.shape[0], -1) != 0)
        return
    rng = np.random.default_rng(a.seed)
    for k, c in ((64, 64), (256, 256), (512, 512)):
        for density in (0.1, 0.05):
            report("uniform random {}x{}x3x3".format(k, c), rng.random((k, c * 9)) < density)


if __name__ == "__main__":
    main()
