"""Rewrite pruned Conv nodes into ``SparseConv2d`` plugin nodes (onnx-graphsurgeon).

Candidates are ``Conv`` nodes that are 2-D, have ``group = 1`` and constant weight
(and bias) from an initializer or a Constant node; any kernel / stride / dilation /
pads (``auto_pad`` resolved) is accepted. A following ``BatchNormalization`` that
is the conv output's only consumer is folded into the weights, and a following
``Relu`` / ``Clip`` with constant bounds (only consumer) becomes the node's
activation. A selection policy (:mod:`trt_sparse.policy`) decides per layer;
every layer that is not converted keeps its dense Conv (and its BN / activation
nodes) untouched, with the reason recorded in the report.

The written node (docs/FORMAT.md, docs/CONVERT.md): op type ``SparseConv2d`` in
the custom domain ``trt_sparse`` (opset 1 added to the model's opset imports);
TensorRT's ONNX parser looks the creator up by op type with the STRING
attributes ``plugin_version`` / ``plugin_namespace`` and uses the domain only as a
second-chance namespace (10.10+), so the domain does not disturb the lookup while
letting onnxruntime and the ONNX checker tell the node from a builtin op.
"""
import collections
import fnmatch
import time

import numpy as np
import onnx
import onnx_graphsurgeon as gs
from onnx import helper

from . import format as fmt
from .errors import FormatError, TrtSparseError, UnsupportedError
from .onnx_io import ALLOW_TF32_ATTR, conv_params, tensor_shapes

PLUGIN_OP = "SparseConv2d"
PLUGIN_DOMAIN = "trt_sparse"
PLUGIN_DOMAIN_VERSION = 1
PLUGIN_VERSION = "1"
PLUGIN_NAMESPACE = ""

ACT_NONE, ACT_RELU, ACT_CLIP = 0, 1, 2
#: --weights: auto = packed32 where that is lossless (fp16-representable values, C*R*S <= 65536), else exact
WEIGHT_CHOICES = ("auto",) + fmt.MODES
_ONNX_DOMAINS = ("", "ai.onnx")
_FLOAT_TYPES = (np.float32, np.float16)
_SKELETON_MAX_ELEMENTS = 4096  # initializers up to this size keep their data for shape inference


class LayerReport(object):
    """What the converter found and decided for one Conv node (one row of the report)."""

    FIELDS = (
        "name", "weight_shape", "input_hw", "strides", "pads", "dilations", "group", "dtype",
        "nnz", "sparsity", "decision", "reason", "fused", "activation", "weight_format", "dense_bytes", "packed_bytes",
        "predicted_speedup", "packed32_max_abs_err", "packed32_max_rel_err", "allow_tf32",
    )

    def __init__(self, name, **kw):
        self.name = name
        for f in self.FIELDS[1:]:
            setattr(self, f, kw.get(f))
        if self.fused is None:
            self.fused = []

    @property
    def converted(self):
        """True when the layer became a SparseConv2d node."""
        return self.decision == "sparse"

    def to_dict(self):
        """JSON-friendly dict of the row."""
        out = collections.OrderedDict()
        for f in self.FIELDS:
            v = getattr(self, f)
            out[f] = list(v) if isinstance(v, tuple) else v
        return out


class ConvertResult(object):
    """The rewritten model plus the per-layer report and totals."""

    def __init__(self, model, layers, options, seconds):
        self.model = model
        self.layers = layers
        self.options = options
        self.seconds = seconds
        self.verification = None  # filled by the caller (trt_sparse.verify.VerifyResult)

    @property
    def converted(self):
        """LayerReports of the converted layers."""
        return [layer for layer in self.layers if layer.converted]

    def totals(self):
        """dict: conv/converted counts and weight bytes before/after."""
        before = sum(layer.dense_bytes or 0 for layer in self.layers)
        after = sum((layer.packed_bytes if layer.converted else layer.dense_bytes) or 0 for layer in self.layers)
        return collections.OrderedDict([
            ("conv_layers", len(self.layers)),
            ("converted", len(self.converted)),
            ("weight_bytes_before", before),
            ("weight_bytes_after", after),
            ("weight_bytes_ratio", (after / float(before)) if before else None),
            ("tf32_layers", sum(1 for layer in self.converted if layer.allow_tf32)),
        ])


class ConvertOptions(object):
    """Options of :func:`convert_model` (CLI flags of ``trt-sparse convert``)."""

    def __init__(self, policy=None, weights="auto", fuse=True, input_shapes=None, batch=1, exclude=(),
                 allow_tf32=False):
        from .policy import ThresholdPolicy

        if weights not in WEIGHT_CHOICES:
            raise TrtSparseError("--weights must be one of {}, got {!r}".format(", ".join(WEIGHT_CHOICES), weights))
        self.policy = policy if policy is not None else ThresholdPolicy()
        self.weights = weights
        self.fuse = fuse
        self.input_shapes = dict(input_shapes or {})
        self.batch = int(batch)
        self.exclude = tuple(exclude or ())
        #: write allow_tf32 = 1 on the SparseConv2d nodes of fp32 layers (the plugin may then run them with
        #: TF32 tensor-core math, ~1e-3 relative error); False (default) writes nothing: exact fp32
        self.allow_tf32 = bool(allow_tf32)

    def excluded(self, name):
        """The --exclude pattern matching layer ``name`` (fnmatch), or None."""
        for pat in self.exclude:
            if fnmatch.fnmatchcase(name, pat):
                return pat
        return None

    def to_dict(self):
        """JSON-friendly description."""
        return collections.OrderedDict([
            ("policy", self.policy.describe()), ("weights", self.weights), ("fuse", self.fuse),
            ("input_shapes", {k: list(v) for k, v in self.input_shapes.items()}), ("batch", self.batch),
            ("exclude", list(self.exclude)), ("allow_tf32", self.allow_tf32),
        ])


# -- helpers -----------------------------------------------------------------------------
def _is_onnx_op(node, op):
    return node.op == op and (node.domain or "") in _ONNX_DOMAINS


def _const_value(tensor):
    """numpy value of a gs tensor that is an initializer or the output of a Constant node, else None."""
    if isinstance(tensor, gs.Constant):
        return np.asarray(tensor.values)
    if tensor is None or not tensor.name or len(tensor.inputs) != 1:
        return None
    prod = tensor.inputs[0]
    if not _is_onnx_op(prod, "Constant"):
        return None
    attrs = prod.attrs
    if "value" in attrs and isinstance(attrs["value"], gs.Constant):
        return np.asarray(attrs["value"].values)
    for key, dtype in (("value_float", np.float32), ("value_floats", np.float32),
                       ("value_int", np.int64), ("value_ints", np.int64)):
        if key in attrs:
            return np.asarray(attrs[key], dtype=dtype)
    return None


def _present(node, i):
    """The i-th input of ``node`` if present (not omitted with an empty name), else None."""
    if i < len(node.inputs) and node.inputs[i].name:
        return node.inputs[i]
    return None


def _sole_consumer(tensor, graph_outputs):
    """The only node consuming ``tensor`` if there is exactly one and it is not a graph output."""
    if tensor.name in graph_outputs or len(tensor.outputs) != 1:
        return None
    return tensor.outputs[0]


def _used(tensor, graph_outputs):
    return bool(tensor.outputs) or tensor.name in graph_outputs


def fixed_input_shapes(model, input_shapes=None, batch=1):
    """dict graph input -> dims (int or None) with the batch dim and ``input_shapes`` filled in."""
    inits = {i.name for i in model.graph.initializer}
    out = {}
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        if input_shapes and vi.name in input_shapes:
            out[vi.name] = tuple(int(v) for v in input_shapes[vi.name])
            continue
        t = vi.type.tensor_type
        if not t.HasField("shape"):
            out[vi.name] = None
            continue
        dims = []
        for i, d in enumerate(t.shape.dim):
            if d.HasField("dim_value") and d.dim_value > 0:
                dims.append(int(d.dim_value))
            elif i == 0:
                dims.append(int(batch))
            else:
                dims.append(None)
        out[vi.name] = tuple(dims)
    unknown = sorted(set(input_shapes or {}) - set(out))
    if unknown:
        raise TrtSparseError("--input-shape names {} which is not a graph input (inputs: {})".format(
            ", ".join(unknown), ", ".join(sorted(out)) or "none"))
    return out


def static_shapes(model, input_shapes=None, batch=1):
    """Shape inference on a weight-less skeleton of ``model`` with the inputs' dynamic dims fixed.

    Returns dict tensor name -> dims tuple (None for unknown dims).
    """
    fixed = fixed_input_shapes(model, input_shapes, batch)
    g = onnx.GraphProto()
    g.name = model.graph.name
    g.node.extend(model.graph.node)
    g.output.extend(model.graph.output)
    g.value_info.extend(model.graph.value_info)
    for vi in model.graph.input:
        if vi.name in fixed and fixed[vi.name] is not None:
            elem = vi.type.tensor_type.elem_type
            g.input.append(helper.make_tensor_value_info(
                vi.name, elem, [d if d is not None else "?" + str(i) for i, d in enumerate(fixed[vi.name])]))
        elif vi.name in fixed:
            g.input.append(vi)
    for init in model.graph.initializer:
        n = int(np.prod(init.dims)) if len(init.dims) else 1
        if n <= _SKELETON_MAX_ELEMENTS and init.data_location != onnx.TensorProto.EXTERNAL:
            g.initializer.append(init)
        else:
            g.input.append(helper.make_tensor_value_info(init.name, init.data_type, list(init.dims)))
    sk = helper.make_model(g, opset_imports=list(model.opset_import))
    sk.ir_version = model.ir_version
    sk.functions.extend(model.functions)
    return tensor_shapes(sk)


# -- analysis of one Conv ----------------------------------------------------------------
class _Plan(object):
    """Internal: what converting one Conv would take (nodes to remove, folded weights)."""

    def __init__(self):
        self.weight = None
        self.bias = None
        self.params = None
        self.remove = []  # nodes replaced by the plugin node (conv first)
        self.output = None  # gs tensor the plugin node produces
        self.activation = ACT_NONE
        self.clip = (0.0, 6.0)
        self.fused = []
        self.fp32 = True  # the Conv's type T (weight and input) is float32


def _bn_fold(bn, weight, bias):
    """Fold BatchNormalization ``bn`` into (weight, bias); None if not foldable (with reason)."""
    if int(bn.attrs.get("training_mode", 0)) != 0:
        return None, "BatchNormalization in training mode"
    if int(bn.attrs.get("spatial", 1)) != 1:
        return None, "BatchNormalization with spatial = 0"
    vals = [_const_value(_present(bn, i)) if _present(bn, i) is not None else None for i in range(1, 5)]
    if any(v is None for v in vals):
        return None, "BatchNormalization parameters are not constants"
    k = weight.shape[0]
    gamma, beta, mean, var = (np.asarray(v, dtype=np.float64).reshape(-1) for v in vals)
    if any(v.size != k for v in (gamma, beta, mean, var)):
        return None, "BatchNormalization parameters do not have K = {} entries".format(k)
    eps = float(bn.attrs.get("epsilon", 1e-5))
    scale = gamma / np.sqrt(var + eps)
    w = weight.astype(np.float64) * scale[:, None, None, None]
    b = (np.zeros(k) if bias is None else bias.astype(np.float64)) - mean
    b = b * scale + beta
    if not (np.all(np.isfinite(w)) and np.all(np.isfinite(b))):
        return None, "folding BatchNormalization gives non-finite weights"
    return (w, b), None


def _clip_bounds(node):
    """(min, max) of a Clip node as floats (None when absent); raises ValueError if not constant."""
    if "min" in node.attrs or "max" in node.attrs:  # opset < 11
        lo = node.attrs.get("min")
        hi = node.attrs.get("max")
        return (None if lo is None else float(lo)), (None if hi is None else float(hi))
    bounds = []
    for i in (1, 2):
        t = _present(node, i)
        if t is None:
            bounds.append(None)
            continue
        v = _const_value(t)
        if v is None or v.size != 1:
            raise ValueError("Clip bounds are not constant scalars")
        bounds.append(float(v.reshape(-1)[0]))
    return bounds[0], bounds[1]


def _fuse_chain(plan, conv, graph_outputs, weight, bias):
    """Extend ``plan`` with a foldable BatchNormalization and a fusable Relu/Clip after ``conv``."""
    out = conv.outputs[0]
    nxt = _sole_consumer(out, graph_outputs)
    if nxt is not None and _is_onnx_op(nxt, "BatchNormalization") and nxt.inputs[0] is out \
            and not any(_used(t, graph_outputs) for t in nxt.outputs[1:]):
        folded, _why = _bn_fold(nxt, weight, bias)
        if folded is not None:
            weight, bias = folded
            plan.remove.append(nxt)
            plan.fused.append("BatchNormalization")
            out = nxt.outputs[0]
            nxt = _sole_consumer(out, graph_outputs)
    if nxt is not None and _is_onnx_op(nxt, "Relu"):
        plan.activation = ACT_RELU
        plan.remove.append(nxt)
        plan.fused.append("Relu")
        out = nxt.outputs[0]
    elif nxt is not None and _is_onnx_op(nxt, "Clip") and nxt.inputs[0] is out:
        try:
            lo, hi = _clip_bounds(nxt)
        except ValueError:
            lo = hi = "dynamic"
        if lo == "dynamic":
            pass
        elif lo is not None and hi is not None and np.isfinite(lo) and np.isfinite(hi) and lo <= hi:
            plan.activation = ACT_CLIP
            plan.clip = (lo, hi)
            plan.remove.append(nxt)
            plan.fused.append("Clip({:g}, {:g})".format(lo, hi))
            out = nxt.outputs[0]
        elif lo == 0.0 and hi is None:
            plan.activation = ACT_RELU
            plan.remove.append(nxt)
            plan.fused.append("Clip(0, inf)")
            out = nxt.outputs[0]
    plan.output = out
    return weight, bias


def _input_hw(shapes, name):
    dims = shapes.get(name)
    if dims is None or len(dims) != 4:
        return None
    h, w = dims[2], dims[3]
    return (h, w) if h is not None and w is not None else None


def _analyze(conv, graph_outputs, shapes, options):
    """(LayerReport, _Plan or None). Raises UnsupportedError for malformed attributes."""
    name = conv.name
    x = conv.inputs[0] if conv.inputs else None
    wt = _present(conv, 1)
    rep = LayerReport(name, group=int(conv.attrs.get("group", 1)), fused=[])
    if x is None or wt is None:
        raise UnsupportedError("Conv {}: needs an input X and a weight W".format(name))
    rep.input_hw = _input_hw(shapes, x.name)
    weight = _const_value(wt)
    wshape = weight.shape if weight is not None else shapes.get(wt.name)
    rep.weight_shape = tuple(int(v) for v in wshape) if wshape and all(v is not None for v in wshape) else None
    if weight is not None:
        rep.dense_bytes = int(weight.size * weight.dtype.itemsize)
    if weight is None:
        rep.decision, rep.reason = "dense", "weight {} is not a constant (computed at run time)".format(wt.name)
        return rep, None
    if weight.ndim != 4:
        rep.decision, rep.reason = "dense", "not a 2-D conv (weight rank {})".format(weight.ndim)
        return rep, None
    if rep.group != 1:
        rep.decision, rep.reason = "dense", "group = {} (only group = 1 is supported)".format(rep.group)
        return rep, None
    if weight.dtype.type not in _FLOAT_TYPES:
        rep.decision, rep.reason = "dense", "weight dtype {} (fp32/fp16 only)".format(weight.dtype)
        return rep, None
    if x.dtype is not None and np.dtype(x.dtype).type not in _FLOAT_TYPES:
        rep.decision, rep.reason = "dense", "input dtype {} (fp32/fp16 only)".format(np.dtype(x.dtype))
        return rep, None
    # ONNX Conv: X and W share T, so the weight's dtype decides when X's is not inferred (inner tensors)
    io_dtype = np.dtype(x.dtype) if x.dtype is not None else weight.dtype
    rep.dtype = "fp16" if io_dtype == np.float16 else "fp32"
    bt = _present(conv, 2)
    bias = None
    if bt is not None:
        bias = _const_value(bt)
        if bias is None:
            rep.decision, rep.reason = "dense", "bias {} is not a constant".format(bt.name)
            return rep, None
        bias = bias.reshape(-1)
    attrs = {k: v for k, v in conv.attrs.items()}
    hw = rep.input_hw
    auto_pad = attrs.get("auto_pad", "NOTSET")
    if auto_pad in ("SAME_UPPER", "SAME_LOWER") and hw is None:
        strides = tuple(attrs.get("strides", (1, 1)))
        if len(strides) == 2 and all(int(s) == 1 for s in strides):
            hw = (1 << 20, 1 << 20)  # stride 1: SAME pads do not depend on the input size
        else:
            rep.decision = "dense"
            rep.reason = "auto_pad {} with stride > 1 needs a static input H/W (give --input-shape)".format(auto_pad)
            return rep, None
    params = conv_params(name, attrs, weight.shape, hw)
    rep.strides, rep.pads, rep.dilations = params.strides, params.pads, params.dilations

    plan = _Plan()
    plan.params = params
    plan.fp32 = weight.dtype == np.float32  # ONNX Conv: X and W share T (X's dtype may be unknown here)
    plan.remove.append(conv)
    w64, b64 = weight, bias
    if options.fuse:
        w64, b64 = _fuse_chain(plan, conv, graph_outputs, weight, bias)
    else:
        plan.output = conv.outputs[0]
    w32 = np.asarray(w64, dtype=np.float32)
    if not np.all(np.isfinite(w32)):
        rep.decision, rep.reason = "dense", "weight has NaN/Inf values"
        return rep, None
    plan.weight = w32
    plan.bias = None if b64 is None else np.asarray(b64, dtype=np.float32)
    rep.fused = list(plan.fused)
    rep.activation = plan.activation
    total = w32.size
    rep.nnz = int(np.count_nonzero(w32))
    rep.sparsity = 1.0 - rep.nnz / float(total)
    return rep, plan


def packed32_is_lossless(weight):
    """True when packed32 stores ``weight`` exactly: C*R*S fits 16 bits and every value is fp16-representable."""
    k, c, r, s = weight.shape
    if c * r * s > fmt.PACKED32_MAX_INDEX:
        return False
    w = np.asarray(weight, dtype=np.float32)
    with np.errstate(over="ignore"):
        return bool(np.array_equal(w.astype(np.float16).astype(np.float32), w))


def _plugin_attrs(sw, params, plan, allow_tf32=False):
    """OrderedDict of the SparseConv2d attributes (docs/FORMAT.md); ``allow_tf32`` only when set."""
    arrays = fmt.to_arrays(sw)
    attrs = collections.OrderedDict()
    attrs["plugin_version"] = PLUGIN_VERSION
    attrs["plugin_namespace"] = PLUGIN_NAMESPACE
    attrs["format_version"] = fmt.FORMAT_VERSION
    attrs["weight_shape"] = [int(v) for v in sw.shape]
    attrs["strides"] = [int(v) for v in params.strides]
    attrs["pads"] = [int(v) for v in params.pads]
    attrs["dilations"] = [int(v) for v in params.dilations]
    attrs["activation"] = int(plan.activation)
    attrs["clip_min"] = float(plan.clip[0])
    attrs["clip_max"] = float(plan.clip[1])
    attrs["weight_format"] = 0 if sw.mode == "exact" else 1
    if allow_tf32:
        attrs[ALLOW_TF32_ATTR] = 1
    base = plan.remove[0].name
    for key in ("row_offsets", "indices", "values", "packed"):
        if key in arrays:
            attrs[key] = gs.Constant("{}.{}".format(base, key), np.ascontiguousarray(arrays[key]))
    if plan.bias is not None:
        attrs["bias"] = gs.Constant(base + ".bias", np.ascontiguousarray(plan.bias, dtype=np.float32))
    return attrs


# -- main entry ----------------------------------------------------------------------------
def check_collisions(model):
    """Raise TrtSparseError when the model already uses our op type or domain."""
    def walk(nodes, where):
        for node in nodes:
            if node.op_type == PLUGIN_OP:
                raise TrtSparseError(
                    "{}node {!r} already has op type {} (already converted? convert the original model)".format(
                        where, node.name, PLUGIN_OP))
    walk(model.graph.node, "")
    for fn in model.functions:
        if fn.name == PLUGIN_OP:
            raise TrtSparseError("the model defines a local function named {}, which collides with the plugin op".format(
                PLUGIN_OP))
        walk(fn.node, "function {}: ".format(fn.name))
    for op in model.opset_import:
        if op.domain == PLUGIN_DOMAIN:
            raise TrtSparseError("the model already imports the opset domain {!r} (already converted?)".format(
                PLUGIN_DOMAIN))


def _unique_names(graph):
    """Give unnamed nodes a unique name (needed as plugin layer / report names)."""
    taken = {n.name for n in graph.nodes if n.name}
    counter = 0
    for node in graph.nodes:
        if not node.name:
            while True:
                cand = "{}_{}".format(node.op, counter)
                counter += 1
                if cand not in taken:
                    break
            node.name = cand
            taken.add(cand)


def convert_model(model, options=None, progress=None):
    """Rewrite the Conv nodes of ``model`` chosen by ``options.policy`` into SparseConv2d nodes.

    Returns a :class:`ConvertResult` (the new ModelProto and the per-layer report).
    ``model`` itself is not modified. Raises TrtSparseError for models without a
    Conv, with our op/domain already present, or with malformed Conv attributes.
    """
    t0 = time.time()
    options = options or ConvertOptions()
    check_collisions(model)
    convs = [n for n in model.graph.node if n.op_type == "Conv" and n.domain in _ONNX_DOMAINS]
    if not convs:
        raise TrtSparseError("the model has no Conv node in its main graph (nothing to convert)")
    shapes = static_shapes(model, options.input_shapes, options.batch)
    graph = gs.import_onnx(model)
    _unique_names(graph)
    graph_outputs = {t.name for t in graph.outputs}
    layers, plans = [], []
    conv_nodes = [n for n in graph.nodes if _is_onnx_op(n, "Conv")]
    for node in conv_nodes:
        rep, plan = _analyze(node, graph_outputs, shapes, options)
        layers.append(rep)
        plans.append(plan)
    candidates = [p for p in plans if p is not None]
    if not candidates:
        first = layers[0]
        raise TrtSparseError("no Conv node can be converted: {}: {}{}".format(
            first.name, first.reason, " (and {} more Conv nodes)".format(len(layers) - 1) if len(layers) > 1 else ""))
    # a node may be claimed by two plans only if graphs are odd (a conv feeding itself); guard anyway
    claimed = set()
    replaced = {}
    for rep, plan in zip(layers, plans):
        if progress is not None:
            progress(rep.name)
        if plan is None:
            continue
        if any(id(n) in claimed for n in plan.remove):
            rep.decision, rep.reason = "dense", "overlaps another converted layer"
            continue
        pat = options.excluded(rep.name)
        if pat is not None:
            rep.decision, rep.reason, rep.fused = "dense", "excluded by --exclude {}".format(pat), []
            continue
        layer_info = layer_geometry(rep, plan.params)
        layer_info.update(options.policy.weight_features(plan.weight))
        ok, reason, predicted = options.policy.decide(layer_info, rep.nnz, rep.sparsity)
        rep.predicted_speedup = predicted
        if not ok:
            rep.decision, rep.reason = "dense", reason
            rep.fused = []
            continue
        mode = options.weights
        if mode == "auto":
            mode = "packed32" if packed32_is_lossless(plan.weight) else "exact"
        try:
            sw = fmt.pack(plan.weight, mode)
        except FormatError as exc:
            rep.decision, rep.reason, rep.fused = "dense", "{} weights: {}".format(mode, exc), []
            continue
        rep.weight_format = mode
        if mode == "packed32":
            rep.packed32_max_abs_err, rep.packed32_max_rel_err = fmt.packed32_rounding_error(plan.weight)
        rep.packed_bytes = int(sw.packed_bytes())
        rep.decision, rep.reason = "sparse", reason
        # TF32 only where asked for and where it means something: fp32 layers (fp16 plans ignore it)
        rep.allow_tf32 = options.allow_tf32 and plan.fp32
        for n in plan.remove:
            claimed.add(id(n))
        replaced[id(plan.remove[0])] = (plan, sw, rep.allow_tf32)
    dropped = _rewrite(graph, replaced)
    out = _export(graph, model, dropped)
    return ConvertResult(out, layers, options, time.time() - t0)


def layer_geometry(rep, params):
    """The cost-model layer dict (trt_sparse.cost_model API) of a conv; H/W None when unknown."""
    k, c, r, s = params.weight_shape
    h, w = rep.input_hw if rep.input_hw else (None, None)
    return {
        "name": rep.name, "C": c, "K": k, "R": r, "S": s, "H": h, "W": w,
        "stride_h": params.strides[0], "stride_w": params.strides[1], "pads": list(params.pads),
        "dilation_h": params.dilations[0], "dilation_w": params.dilations[1],
        "dtype": rep.dtype,
    }


def _rewrite(graph, replaced):
    """Replace each planned Conv (and its fused BN / activation nodes) by one SparseConv2d node.

    Returns the names of the tensors only the replaced nodes read (dense weights, BN
    parameters, clip bounds), which the output no longer needs.
    """
    if not replaced:
        return set()
    removed = set()
    orphan_candidates = set()  # tensors only the removed nodes read (weights, BN params, clip bounds)
    new_nodes = []
    for node in graph.nodes:
        entry = replaced.get(id(node))
        if entry is None:
            new_nodes.append(node)
            continue
        plan, sw, allow_tf32 = entry
        x = node.inputs[0]
        out = plan.output
        for n in plan.remove:
            removed.add(id(n))
            orphan_candidates.update(t.name for t in n.inputs[1:] if t.name)
        for n in plan.remove:
            n.inputs.clear()
            n.outputs.clear()
        sparse = gs.Node(op=PLUGIN_OP, name=node.name, domain=PLUGIN_DOMAIN,
                         attrs=_plugin_attrs(sw, plan.params, plan, allow_tf32), inputs=[x], outputs=[out])
        new_nodes.append(sparse)
    graph_outputs = {t.name for t in graph.outputs}
    kept = []
    for n in new_nodes:
        if id(n) in removed:
            continue
        # a Constant node that fed only the replaced nodes (weights given as Constant nodes) goes too
        if _is_onnx_op(n, "Constant") and n.outputs and all(t.name in orphan_candidates for t in n.outputs) \
                and not any(_used(t, graph_outputs) for t in n.outputs):
            n.outputs.clear()
            continue
        kept.append(n)
    graph.nodes = kept
    return orphan_candidates


def _export(graph, model, dropped=()):
    """gs graph -> ModelProto keeping the original's opsets (+ ours), metadata and model fields.

    Initializers of the original that no node reads are kept too (graphsurgeon
    exports only referenced ones), except those only the replaced nodes read.
    """
    opsets = [helper.make_opsetid(o.domain, o.version) for o in model.opset_import]
    if any(n.op == PLUGIN_OP for n in graph.nodes):
        # TensorRT 8.2's parser looks the default opset up under "" once a model imports two
        # domains: spell the default domain "" (the ONNX spec makes "" and "ai.onnx" the same)
        if not any(o.domain == "" for o in opsets):
            for o in opsets:
                if o.domain == "ai.onnx":
                    o.domain = ""
        opsets.append(helper.make_opsetid(PLUGIN_DOMAIN, PLUGIN_DOMAIN_VERSION))
    out = gs.export_onnx(graph, do_type_check=False, opset_imports=opsets)
    out.ir_version = model.ir_version
    out.producer_name = model.producer_name
    out.producer_version = model.producer_version
    out.domain = model.domain
    out.model_version = model.model_version
    out.doc_string = model.doc_string
    out.graph.doc_string = model.graph.doc_string
    out.graph.name = model.graph.name
    del out.metadata_props[:]
    out.metadata_props.extend(model.metadata_props)
    present = {i.name for i in out.graph.initializer}
    for init in model.graph.initializer:
        if init.name not in present and init.name not in dropped:
            out.graph.initializer.append(init)
            present.add(init.name)
    # graphsurgeon drops graph inputs that are initializers (old exporters list weights as inputs):
    # restore the original input list, less the weights of replaced nodes
    exported = {vi.name: vi for vi in out.graph.input}
    inputs = []
    for vi in model.graph.input:
        if vi.name in exported:
            inputs.append(exported.pop(vi.name))
        elif vi.name in present:
            inputs.append(vi)
    inputs.extend(exported.values())
    del out.graph.input[:]
    out.graph.input.extend(inputs)
    return out


_PROTO_LIMIT = 2 ** 31 - 1


def _run_checker(model, path=None):
    """None if ``onnx.checker.check_model(full_check=True)`` passes, else its one-line message."""
    try:
        if model.ByteSize() < _PROTO_LIMIT:
            onnx.checker.check_model(model, full_check=True)
        elif path is not None:
            onnx.checker.check_model(path, full_check=True)
        else:
            return "not checked: over 2 GB and no file yet"
    except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError) as exc:
        return " ".join(str(exc).split())[:300]
    return None


def check_output_model(model, path=None, original=None, original_path=None):
    """``onnx.checker.check_model(full_check=True)`` on the rewritten model.

    The SparseConv2d node lives in the custom domain ``trt_sparse``; the checker
    skips schema checks for domains it has no schemas for, so the full check
    (including strict shape inference) runs on everything else unchanged. Models
    over 2 GB are checked from ``path`` (their external-data file) instead.
    Returns None when the check passes, or a warning when the *original* model
    fails the same check (the rewrite cannot repair it); raises TrtSparseError
    when only the rewritten model fails.
    """
    msg = _run_checker(model, path)
    if msg is None or msg.startswith("not checked"):
        return msg
    if original is not None:
        orig_msg = _run_checker(original, original_path)
        if orig_msg is not None:
            return "the input model already fails onnx.checker full check ({})".format(orig_msg)
    raise TrtSparseError("the rewritten model fails onnx.checker: {}".format(msg))


def mark_attribute_tensors_external(model, location, size_threshold=1024):
    """Mark the SparseConv2d TENSOR attributes (>= ``size_threshold`` bytes) for external data at ``location``.

    ``onnx.save_model(save_as_external_data=True)`` moves only initializers by
    default; the rewritten model's weights live in node attributes, so they are
    marked here and written into the same ``.data`` file. (TensorRT's ONNX parser
    reads TENSOR attributes through the same external-data-aware weight loader as
    initializers.) Returns the number of tensors marked.
    """
    from onnx.external_data_helper import set_external_data

    count = 0
    for node in model.graph.node:
        if node.op_type != PLUGIN_OP:
            continue
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.TENSOR and attr.t.HasField("raw_data") \
                    and len(attr.t.raw_data) >= size_threshold:
                set_external_data(attr.t, location)
                count += 1
    return count
