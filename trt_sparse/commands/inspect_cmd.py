"""``trt-sparse inspect MODEL.onnx [--json]``: per-Conv sparsity and packed weight sizes.

Lists the dense ``Conv`` nodes of a model and, in a converted model, its
``SparseConv2d`` nodes (read back from their packed attributes), saying which of
them allow TF32 math (``allow_tf32 = 1``: note, JSON ``allow_tf32``, total ``tf32_layers``).
"""
import json
import os
import sys

import numpy as np

from .. import PLUGIN_NAME
from .. import format as fmt
from ..errors import FormatError, TrtSparseError, UnsupportedError
from ..onnx_io import allow_tf32_value, conv_params, constant_value, load_model, node_attributes, tensor_shapes
from . import add_input_shape_argument

HELP = "show each Conv (and SparseConv2d) layer's shape, geometry, sparsity and dense vs packed weight bytes"


def add_arguments(parser):
    """Arguments of ``trt-sparse inspect``."""
    parser.add_argument("model", help="ONNX model (.onnx)")
    parser.add_argument("--json", action="store_true", help="print a JSON report instead of the table")
    parser.add_argument("--layers-json", metavar="OUT.json",
                        help="also write the Conv layers as a bench-kernels layers file, each with its own sparsity "
                             "(then: trt-sparse bench-kernels --layers OUT.json on the target GPU, and convert "
                             "--policy measured --measurements RESULT.json)")
    add_input_shape_argument(parser, "with dynamic dims, for --layers-json")


def _packed_bytes(w, mode):
    """Bytes of ``w`` in the packed format ``mode``, or (None, reason) when it cannot be packed."""
    try:
        return fmt.pack(w, mode).packed_bytes(), None
    except FormatError as exc:
        return None, str(exc)


def conv_layer_row(graph, node, index, shapes_cache):
    """Report row of one dense Conv node (``shapes_cache``: {"model": ..., optional "shapes": ...})."""
    name = node.name or "Conv (output {})".format(node.output[0] if node.output else "#{}".format(index))
    row = dict(name=name, op="Conv", weight=node.input[1] if len(node.input) > 1 else None, weight_shape=None, strides=None,
               pads=None, dilations=None, group=None, params=None, nnz=None, sparsity=None, dense_bytes=None,
               exact_bytes=None, packed32_bytes=None, allow_tf32=None, notes=[])
    if row["weight"] is None:
        row["notes"].append("no weight input")
        return row
    try:
        w = constant_value(graph, row["weight"])
    except TrtSparseError as exc:
        row["notes"].append(str(exc))
        return row
    if w is None:
        row["notes"].append("weight {} is not a constant".format(row["weight"]))
        return row
    if not np.issubdtype(w.dtype, np.floating):
        row["notes"].append("weight dtype {} is not floating point".format(w.dtype))
        return row
    row["weight_shape"] = [int(d) for d in w.shape]
    row["params"] = int(w.size)
    row["nnz"] = int(np.count_nonzero(w))
    row["sparsity"] = 1.0 - row["nnz"] / float(w.size) if w.size else 0.0
    row["dense_bytes"] = int(w.nbytes)
    attrs = node_attributes(node)
    input_hw = None
    if str(attrs.get("auto_pad", "NOTSET")).startswith("SAME"):
        if "shapes" not in shapes_cache:
            shapes_cache["shapes"] = tensor_shapes(shapes_cache["model"])
        x_shape = shapes_cache["shapes"].get(node.input[0])
        input_hw = x_shape[2:] if x_shape is not None and len(x_shape) == 4 else None
    try:
        p = conv_params(name, attrs, w.shape, input_hw)
    except UnsupportedError as exc:
        row["notes"].append(str(exc))
        return row
    row.update(strides=list(p.strides), pads=list(p.pads), dilations=list(p.dilations), group=p.group)
    row["exact_bytes"], why = _packed_bytes(w, "exact")
    if why:
        row["notes"].append("exact: " + why)
    row["packed32_bytes"], why = _packed_bytes(w, "packed32")
    if why:
        row["notes"].append("packed32: " + why.split(";")[0])
    if p.group != 1:
        row["notes"].append("group {} > 1: not supported by SparseConv2d".format(p.group))
    return row


def _packed32_bytes_of(sw):
    """packed32 size of a SparseConvWeight's values rounded to fp16, or (None, reason)."""
    if sw.crs > fmt.PACKED32_MAX_INDEX:
        return None, "C*R*S = {} > {} (16-bit index)".format(sw.crs, fmt.PACKED32_MAX_INDEX)
    with np.errstate(over="ignore"):
        v16 = sw.values.astype(np.float16)
    if not np.all(np.isfinite(v16)):
        return None, "values overflow fp16"
    return 4 * (sw.shape[0] + 1) + 4 * int(np.count_nonzero(v16)), None


def _sparse_layer(node, index):
    """Row of a SparseConv2d node, read back from its attributes (docs/FORMAT.md)."""
    name = node.name or "{} (output {})".format(PLUGIN_NAME, node.output[0] if node.output else "#{}".format(index))
    row = dict(name=name, op=PLUGIN_NAME, weight=None, weight_shape=None, strides=None, pads=None, dilations=None, group=1,
               params=None, nnz=None, sparsity=None, dense_bytes=None, exact_bytes=None, packed32_bytes=None,
               allow_tf32=None, notes=[])
    attrs = node_attributes(node)
    try:
        row["allow_tf32"] = allow_tf32_value(node) == 1
    except FormatError as exc:  # the plugin would refuse this node
        row["notes"].append(str(exc))
    try:
        shape = tuple(int(v) for v in attrs["weight_shape"])
        mode_code = int(attrs.get("weight_format", 0))
        if mode_code not in (0, 1):
            raise FormatError("unknown weight_format {}".format(mode_code))
        sw = fmt.from_arrays(shape, attrs, fmt.MODES[mode_code])
    except KeyError as exc:
        row["notes"].append("SparseConv2d: missing attribute {}".format(exc))
        return row
    except (FormatError, TypeError, ValueError) as exc:
        row["notes"].append("SparseConv2d: {}".format(exc))
        return row
    total = int(np.prod(shape))
    row.update(weight_shape=list(shape), params=total, nnz=sw.nnz, sparsity=1.0 - sw.nnz / float(total),
               dense_bytes=4 * total, exact_bytes=4 * (shape[0] + 1) + 8 * sw.nnz,
               strides=[int(v) for v in attrs.get("strides", (1, 1))],
               pads=[int(v) for v in attrs.get("pads", (0, 0, 0, 0))],
               dilations=[int(v) for v in attrs.get("dilations", (1, 1))])
    row["packed32_bytes"], why = _packed32_bytes_of(sw)
    if why:
        row["notes"].append("packed32: " + why)
    row["notes"].append("{} ({}{})".format(PLUGIN_NAME, sw.mode, ", TF32 allowed" if row["allow_tf32"] else ""))
    return row


def inspect_model(model, shapes=None):
    """Report dict {"layers": [...], "totals": {...}} of every Conv / SparseConv2d node in the main graph.

    ``shapes``: tensor name -> dims (``convert.static_shapes``) where the caller has them; else shape
    inference runs only if a Conv with ``auto_pad`` SAME needs it."""
    graph = model.graph
    layers = []
    cache = {"model": model} if shapes is None else {"model": model, "shapes": shapes}
    for i, node in enumerate(graph.node):
        if node.op_type == "Conv" and node.domain in ("", "ai.onnx"):
            layers.append(conv_layer_row(graph, node, i, cache))
        elif node.op_type == PLUGIN_NAME:
            layers.append(_sparse_layer(node, i))
    if not layers:
        raise TrtSparseError("the model has no Conv nodes ({} nodes, none of type Conv or {})".format(
            len(graph.node), PLUGIN_NAME))
    known = [l for l in layers if l["nnz"] is not None]
    params = sum(l["params"] for l in known)
    nnz = sum(l["nnz"] for l in known)
    exact = [l["exact_bytes"] for l in known if l["exact_bytes"] is not None]
    totals = dict(
        conv_layers=len(layers),
        sparse_conv2d_layers=sum(1 for l in layers if l["op"] == PLUGIN_NAME),
        tf32_layers=sum(1 for l in layers if l["allow_tf32"]),
        constant_weight_layers=len(known),
        params=params,
        nnz=nnz,
        sparsity=(1.0 - nnz / float(params)) if params else 0.0,
        dense_bytes=sum(l["dense_bytes"] for l in known),
        exact_bytes=sum(exact),
        # packed32 where the layer fits it, exact otherwise (what a mixed conversion would carry)
        packed32_bytes=sum(l["packed32_bytes"] if l["packed32_bytes"] is not None else (l["exact_bytes"] or 0)
                           for l in known),
        packed32_unavailable=sum(1 for l in known if l["packed32_bytes"] is None),
    )
    return {"layers": layers, "totals": totals}


def _kib(n):
    return "-" if n is None else "{:.1f}".format(n / 1024.0)


def _tuple(v):
    return "-" if v is None else ",".join(str(i) for i in v)


def format_table(report, title=None):
    """Human-readable table of an :func:`inspect_model` report."""
    head = ["layer", "weight KxCxRxS", "stride", "pads t,l,b,r", "dil", "grp", "sparsity", "nnz",
            "dense KiB", "exact KiB", "packed32 KiB", "note"]
    rows = []
    for l in report["layers"]:
        rows.append([
            l["name"],
            "x".join(str(d) for d in l["weight_shape"]) if l["weight_shape"] else "-",
            _tuple(l["strides"]), _tuple(l["pads"]), _tuple(l["dilations"]),
            "-" if l["group"] is None else str(l["group"]),
            "-" if l["sparsity"] is None else "{:.1f}%".format(100.0 * l["sparsity"]),
            "-" if l["nnz"] is None else str(l["nnz"]),
            _kib(l["dense_bytes"]), _kib(l["exact_bytes"]), _kib(l["packed32_bytes"]),
            "; ".join(l["notes"]),
        ])
    t = report["totals"]
    rows.append(["TOTAL ({} layers)".format(t["conv_layers"]), "", "", "", "", "",
                 "{:.1f}%".format(100.0 * t["sparsity"]), str(t["nnz"]), _kib(t["dense_bytes"]),
                 _kib(t["exact_bytes"]), _kib(t["packed32_bytes"]),
                 "{} of {} with constant weights".format(t["constant_weight_layers"], t["conv_layers"])])
    widths = [max(len(r[i]) for r in rows + [head]) for i in range(len(head))]
    numeric = set(range(6, 11))

    def fmt_row(r):
        cells = [c.rjust(widths[i]) if i in numeric else c.ljust(widths[i]) for i, c in enumerate(r)]
        return "  ".join(cells).rstrip()

    lines = [title] if title else []
    lines.append(fmt_row(head))
    lines.append("  ".join("-" * w for w in widths).rstrip())
    lines.extend(fmt_row(r) for r in rows[:-1])
    lines.append("  ".join("-" * w for w in widths).rstrip())
    lines.append(fmt_row(rows[-1]))
    if t["dense_bytes"]:
        lines.append("weights: dense {} KiB -> exact {} KiB ({:.2f}x), packed32 {} KiB ({:.2f}x)".format(
            _kib(t["dense_bytes"]), _kib(t["exact_bytes"]), t["dense_bytes"] / float(max(t["exact_bytes"], 1)),
            _kib(t["packed32_bytes"]), t["dense_bytes"] / float(max(t["packed32_bytes"], 1))))
    return "\n".join(lines)


def write_layers_json(model, report, shapes, model_path, out_path):
    """Write the bench-kernels layers file of ``model`` (its ``inspect_model`` report, computed with ``shapes``)
    to ``out_path`` (atomically); returns its dict."""
    from ..bench_layers import bench_layers
    from ..report import write_text_atomic

    conv_nodes = [n for n in model.graph.node if n.op_type == "Conv" and n.domain in ("", "ai.onnx")]
    conv_rows = [r for r in report["layers"] if r["op"] == "Conv"]  # same order as the nodes
    doc = bench_layers(list(zip(conv_nodes, conv_rows)), shapes, source=os.path.basename(model_path))
    write_text_atomic(out_path, json.dumps(doc, indent=1) + "\n")
    return doc


def run(args):
    """Print the per-layer report of ``args.model`` (and write ``--layers-json``); returns 0."""
    model = load_model(args.model)
    shapes = None
    if args.layers_json:
        from ..convert import static_shapes
        from ..verify import parse_input_shapes

        if os.path.abspath(args.layers_json) == os.path.abspath(args.model):
            raise TrtSparseError("--layers-json must not overwrite the model")
        shapes = static_shapes(model, parse_input_shapes(args.input_shape), 1)
    report = inspect_model(model, shapes)
    if args.layers_json:
        doc = write_layers_json(model, report, shapes, args.model, args.layers_json)
        print("wrote {}: {} layers, {} skipped{}".format(
            args.layers_json, len(doc["layers"]), len(doc["skipped"]),
            "".join("\n  skipped {}: {}".format(s["name"], s["reason"]) for s in doc["skipped"])), file=sys.stderr)
    if args.json:
        text = json.dumps(dict(model=args.model, **report), indent=2)
    else:
        t = report["totals"]
        title = "{}: {} Conv, {} {} layers".format(args.model, t["conv_layers"] - t["sparse_conv2d_layers"],
                                                    t["sparse_conv2d_layers"], PLUGIN_NAME)
        if t["tf32_layers"]:
            title += " ({} with TF32 allowed: allow_tf32=1)".format(t["tf32_layers"])
        text = format_table(report, title=title)
    try:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
    except BrokenPipeError:  # e.g. `trt-sparse inspect m.onnx | head`: not an error
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    return 0
