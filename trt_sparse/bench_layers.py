"""A model's Conv layers as a ``bench-kernels`` layers file (the format of ``bench/layers.json``).

``trt-sparse inspect MODEL --layers-json OUT.json`` writes it; ``trt-sparse bench-kernels --layers OUT.json``
on the deployment GPU then times every layer at its own sparsity, and ``convert --policy measured
--measurements RESULT.json`` matches each layer to a measurement of its geometry at that sparsity.
"""
from .errors import TrtSparseError

#: layers-file version written here (bench-kernels reads version 1 files)
LAYERS_VERSION = 1


def _benchable(row, x_shape):
    """(None, layer geometry) when bench-kernels can time the Conv row, else (reason, None)."""
    if row["weight_shape"] is None or row["sparsity"] is None:
        return "; ".join(row["notes"]) or "weight is not a constant", None
    if row["group"] != 1 or row["strides"] is None:
        return "; ".join(row["notes"]) or "group {} > 1".format(row["group"]), None
    k, c, r, s = row["weight_shape"]
    if r != s:
        return "kernel {}x{} is not square (bench-kernels times square kernels)".format(r, s), None
    if row["strides"][0] != row["strides"][1] or row["dilations"][0] != row["dilations"][1]:
        return "unequal strides {} or dilations {}".format(row["strides"], row["dilations"]), None
    if len(set(row["pads"])) != 1:
        return "asymmetric pads {} (bench-kernels times equal pads)".format(row["pads"]), None
    if x_shape is None or len(x_shape) != 4 or x_shape[2] is None or x_shape[3] is None:
        return "input H/W unknown (give --input-shape NAME:DIMS)", None
    return None, {"C": int(c), "K": int(k), "H": int(x_shape[2]), "W": int(x_shape[3]), "kernel": int(r),
                  "stride": int(row["strides"][0]), "pad": int(row["pads"][0]), "dilation": int(row["dilations"][0])}


def bench_layers(conv_rows, shapes, source=None):
    """Layers-file dict of a model's dense Conv nodes: ``layers`` (each with its own ``sparsity``) and
    ``skipped`` (name and reason of every Conv that bench-kernels cannot time as written).

    ``conv_rows``: (node, row) per Conv node, the row as ``trt-sparse inspect`` reports it (weight_shape,
    strides, pads, dilations, group, sparsity, notes); ``shapes``: tensor name -> dims from shape inference
    with the inputs' dynamic dims fixed (``convert.static_shapes``).
    """
    layers, skipped, names = [], [], set()
    for node, row in conv_rows:
        why, geom = _benchable(row, shapes.get(node.input[0]) if node.input else None)
        if why:
            skipped.append({"name": row["name"], "reason": why})
            continue
        name = row["name"]
        while name in names:  # bench-kernels' --only selects by name: keep names unique
            name += "_"
        names.add(name)
        layers.append(dict({"name": name}, **geom, sparsity=round(float(row["sparsity"]), 4)))
    if not layers:
        raise TrtSparseError("no Conv layer of the model can be benchmarked ({} skipped: {})".format(
            len(skipped), "; ".join("{}: {}".format(s["name"], s["reason"]) for s in skipped[:3]) or "no Conv nodes"))
    return {
        "version": LAYERS_VERSION,
        "description": "Conv layers of {} with their own sparsity (trt-sparse inspect --layers-json); "
                       "bench-kernels times each at that sparsity unless --sparsity is given".format(
                           source or "the model"),
        "source": source,
        "layers": layers,
        "skipped": skipped,
    }
