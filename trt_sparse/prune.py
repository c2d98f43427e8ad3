"""Magnitude pruning of Conv weights in an ONNX model (for experiments and benchmarks).

This zeroes the smallest-magnitude weights; it does NOT preserve accuracy. Real
deployments prune (and fine-tune) in the training framework, then export.

* ``scope="layer"``  -- every eligible Conv gets exactly ``round(sparsity * size)`` zeros;
* ``scope="global"`` -- one magnitude threshold over all eligible Conv weights
  (exactly ``round(sparsity * total)`` zeros overall, layers end up uneven);
* ``pattern="vector:V"`` -- groups of V consecutive output channels share their
  zero positions (scored by the group's L2 norm per (c, r, s)), the regime the
  tensor-core kernels like; ``K`` must be a multiple of V (else the layer falls
  back to unstructured pruning, reported).

Eligible: Conv nodes with a constant 4-D float weight (initializer or Constant
node) and ``group = 1`` (the plugin does not take grouped/depthwise convs).
``skip_first_last`` leaves the first and the last eligible Conv (graph order) dense.
"""
import collections

import numpy as np
import onnx
from onnx import numpy_helper

from .errors import TrtSparseError

PruneRow = collections.namedtuple("PruneRow", "name weight shape before after note")


def parse_pattern(pattern):
    """'unstructured' -> 1, 'vector:V' -> V (V >= 1)."""
    if pattern in (None, "", "unstructured"):
        return 1
    kind, _, v = str(pattern).partition(":")
    try:
        vec = int(v)
    except ValueError:
        vec = 0
    if kind != "vector" or vec < 1:
        raise TrtSparseError("--pattern {!r}: expected 'unstructured' or 'vector:V' with V >= 1".format(pattern))
    return vec


def _weight_sources(model):
    """Eligible Convs: list of (node, weight name, getter, setter) plus skipped (node, reason)."""
    graph = model.graph
    inits = {i.name: i for i in graph.initializer}
    const_nodes = {}
    for n in graph.node:
        if n.op_type == "Constant" and n.domain in ("", "ai.onnx"):
            for a in n.attribute:
                if a.name == "value":
                    const_nodes[n.output[0]] = a
    eligible, skipped = [], []
    for node in graph.node:
        if node.op_type != "Conv" or node.domain not in ("", "ai.onnx"):
            continue
        name = node.name or node.output[0]
        group = 1
        for a in node.attribute:
            if a.name == "group":
                group = a.i
        if len(node.input) < 2 or not node.input[1]:
            skipped.append((name, "no weight input"))
            continue
        wname = node.input[1]
        if wname in inits:
            holder = inits[wname]
        elif wname in const_nodes:
            holder = const_nodes[wname].t
        else:
            skipped.append((name, "weight {} is not a constant".format(wname)))
            continue
        if group != 1:
            skipped.append((name, "group = {}".format(group)))
            continue
        if len(holder.dims) != 4:
            skipped.append((name, "not a 2-D conv"))
            continue
        if holder.data_type not in (onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.DOUBLE):
            skipped.append((name, "weight is not floating point"))
            continue
        eligible.append((name, wname, holder))
    return eligible, skipped


def _vector_mask(w, keep_fraction, vec):
    """Keep-mask for ``w`` (K, C, R, S) where groups of ``vec`` output channels share positions."""
    k = w.shape[0]
    groups = w.reshape(k // vec, vec, -1).astype(np.float64)
    score = np.sqrt((groups ** 2).sum(axis=1))  # (K/V, CRS)
    n = score.size
    keep = int(round(keep_fraction * n))
    mask = np.zeros(n, dtype=bool)
    if keep > 0:
        order = np.argsort(-score.reshape(-1), kind="stable")
        mask[order[:keep]] = True
    mask = mask.reshape(score.shape)[:, None, :].repeat(vec, axis=1)
    return mask.reshape(w.shape)


def _layer_mask(w, sparsity):
    n = w.size
    zeros = int(round(sparsity * n))
    mask = np.ones(n, dtype=bool)
    if zeros > 0:
        order = np.argsort(np.abs(w.reshape(-1).astype(np.float64)), kind="stable")
        mask[order[:zeros]] = False
    return mask.reshape(w.shape)


def prune_model(model, sparsity, scope="layer", skip_first_last=False, pattern=None):
    """Zero the smallest Conv weights of ``model`` in place; returns the list of PruneRow.

    Raises TrtSparseError for an invalid sparsity/scope or a model without eligible Conv.
    """
    sparsity = float(sparsity)
    if not 0.0 <= sparsity < 1.0:
        raise TrtSparseError("--sparsity must be in [0, 1), got {}".format(sparsity))
    if scope not in ("layer", "global"):
        raise TrtSparseError("--scope must be 'layer' or 'global', got {!r}".format(scope))
    vec = parse_pattern(pattern)
    if vec > 1 and scope != "layer":
        raise TrtSparseError("--pattern vector:V works with --scope layer only")
    if not any(n.op_type == "Conv" for n in model.graph.node):
        raise TrtSparseError("the model has no Conv node (nothing to prune)")
    eligible, skipped = _weight_sources(model)
    rows = [PruneRow(name, None, None, None, None, "skipped: " + why) for name, why in skipped]
    if not eligible:
        raise TrtSparseError("no Conv node can be pruned: {}".format(
            "; ".join("{}: {}".format(n, w) for n, w in skipped[:3])))
    if skip_first_last:
        kept = [eligible[0]] + ([eligible[-1]] if len(eligible) > 1 else [])
        for name, wname, _holder in kept:
            rows.append(PruneRow(name, wname, None, None, None, "skipped: first/last Conv"))
        eligible = eligible[1:-1] if len(eligible) > 2 else []
    seen = set()
    work = []
    for name, wname, holder in eligible:
        if wname in seen:  # a weight shared by several Convs is pruned once
            continue
        seen.add(wname)
        work.append((name, wname, holder, numpy_helper.to_array(holder)))
    if scope == "global" and work:
        mags = np.concatenate([np.abs(w.reshape(-1).astype(np.float64)) for _, _, _, w in work])
        zeros = int(round(sparsity * mags.size))
        keep_global = np.ones(mags.size, dtype=bool)
        if zeros:
            keep_global[np.argsort(mags, kind="stable")[:zeros]] = False
        offset = 0
    for name, wname, holder, w in work:
        before = 1.0 - np.count_nonzero(w) / float(w.size)
        note = ""
        if scope == "global":
            mask = keep_global[offset:offset + w.size].reshape(w.shape)
            offset += w.size
        elif vec > 1 and w.shape[0] % vec == 0:
            mask = _vector_mask(w, 1.0 - sparsity, vec)
            note = "vector:{}".format(vec)
        else:
            mask = _layer_mask(w, sparsity)
            if vec > 1:
                note = "K = {} not a multiple of {}: unstructured".format(w.shape[0], vec)
        pruned = np.where(mask, w, np.zeros((), dtype=w.dtype)).astype(w.dtype)
        holder.CopyFrom(numpy_helper.from_array(pruned, holder.name))
        after = 1.0 - np.count_nonzero(pruned) / float(pruned.size)
        rows.append(PruneRow(name, wname, tuple(w.shape), before, after, note))
    return rows


def format_rows(rows):
    """Plain-text table of a prune run."""
    lines = ["{:<48} {:>20} {:>8} {:>8}  {}".format("conv", "shape", "before", "after", "note")]
    for r in rows:
        shape = "x".join(str(d) for d in r.shape) if r.shape else "-"
        before = "{:.3f}".format(r.before) if r.before is not None else "-"
        after = "{:.3f}".format(r.after) if r.after is not None else "-"
        lines.append("{:<48} {:>20} {:>8} {:>8}  {}".format(r.name[-48:], shape, before, after, r.note))
    pruned = [r for r in rows if r.after is not None]
    total = sum(int(np.prod(r.shape)) for r in pruned)
    zeros = sum(r.after * int(np.prod(r.shape)) for r in pruned)
    lines.append("pruned {} Conv weights, overall sparsity {:.3f}".format(
        len(pruned), zeros / total if total else 0.0))
    return "\n".join(lines)
