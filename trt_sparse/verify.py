"""Check that a rewritten model computes the same function as the original.

The original runs in onnxruntime. The rewritten model runs *split*: its graph is
cut into stages at the ``SparseConv2d`` nodes; every dense stage is one
onnxruntime session and every ``SparseConv2d`` node is computed from its own
attributes (the packed weights, docs/FORMAT.md) by :func:`trt_sparse.reference.sparse_conv2d`.
Both get the same seeded random inputs; each graph output is compared with

    max_abs = max |orig - sparse|,  scale = max |orig|,  rel = max_abs / scale

and passes when ``max_abs <= atol + rtol * scale`` (an error normalised by the
output's magnitude, so outputs near zero do not make element-wise ratios explode).

The tolerances do not depend on a node's ``allow_tf32`` attribute: TF32 math happens
only inside the plugin on the GPU; here every node is computed in float64 from its
packed weights, so verification checks the rewrite itself (weights, geometry, fusion)
at the exact tolerances either way. The TF32 error is checked where it arises:
``trt-sparse bench`` compares the engines with an fp32 rtol of 3e-3 when nodes allow
TF32, and the kernel tests bound the TF32 variants by the same 3e-3.
"""
import collections
import os
import time

import numpy as np
import onnx
from onnx import helper

from . import format as fmt
from .errors import FormatError, TrtSparseError
from .onnx_io import allow_tf32_value

PLUGIN_OP = "SparseConv2d"
DEFAULT_RTOL = {"exact": 1e-4, "packed32": 1e-2}
DEFAULT_ATOL = 1e-6


def _ort():
    try:
        import onnxruntime as ort
    except ImportError:
        raise TrtSparseError("verification needs onnxruntime (pip install 'trt-sparse[verify]'), or pass --no-verify")
    return ort


def _session(model_bytes, threads=0):
    ort = _ort()
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    if threads:
        opts.intra_op_num_threads = threads
    try:
        return ort.InferenceSession(model_bytes, opts, providers=["CPUExecutionProvider"])
    except Exception as exc:
        raise TrtSparseError("onnxruntime cannot load the model: {}".format(" ".join(str(exc).split())[:300]))


def _run(sess, feeds, what):
    try:
        return sess.run(None, feeds)
    except Exception as exc:
        raise TrtSparseError("onnxruntime failed on {}: {}".format(what, " ".join(str(exc).split())[:300]))


# -- inputs ------------------------------------------------------------------------------
def parse_input_shapes(specs):
    """``['x:1x3x224x224', ...]`` -> {'x': (1, 3, 224, 224)} (the --input-shape flag)."""
    out = collections.OrderedDict()
    for spec in specs or []:
        name, sep, dims = spec.rpartition(":")
        try:
            shape = tuple(int(d) for d in dims.lower().split("x"))
        except ValueError:
            shape = ()
        if not sep or not name or not shape or min(shape) < 1:
            raise TrtSparseError("--input-shape {!r}: expected NAME:D0xD1x... with positive dims".format(spec))
        out[name] = shape
    return out


def make_inputs(model, input_shapes=None, batch=1, seed=0):
    """Seeded random feeds for every graph input (float: N(0,1); int/bool: zeros).

    A dynamic first dimension becomes ``batch``; other dynamic dimensions need
    ``input_shapes`` (raises TrtSparseError naming the input otherwise).
    """
    rng = np.random.default_rng(seed)
    inits = {i.name for i in model.graph.initializer}
    feeds = collections.OrderedDict()
    input_shapes = input_shapes or {}
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        t = vi.type.tensor_type
        if not vi.type.HasField("tensor_type"):
            raise TrtSparseError("input {!r} is not a tensor; cannot make a random feed".format(vi.name))
        dtype = helper.tensor_dtype_to_np_dtype(t.elem_type)
        if vi.name in input_shapes:
            shape = tuple(input_shapes[vi.name])
        else:
            shape = []
            for i, d in enumerate(t.shape.dim):
                if d.HasField("dim_value") and d.dim_value > 0:
                    shape.append(int(d.dim_value))
                elif i == 0:
                    shape.append(int(batch))
                else:
                    raise TrtSparseError(
                        "input {!r} has a dynamic dimension {} ({!r}); give --input-shape {}:D0xD1x...".format(
                            vi.name, i, d.dim_param or "?", vi.name))
        if np.issubdtype(dtype, np.floating):
            feeds[vi.name] = rng.standard_normal(shape).astype(dtype)
        else:
            feeds[vi.name] = np.zeros(shape, dtype=dtype)
    return feeds


# -- sparse node evaluation ----------------------------------------------------------------
def sparse_node_params(node):
    """Decode a SparseConv2d NodeProto's attributes into reference.sparse_conv2d keyword arguments."""
    attrs = {}
    for a in node.attribute:
        v = helper.get_attribute_value(a)
        if isinstance(v, onnx.TensorProto):
            v = onnx.numpy_helper.to_array(v)
        elif isinstance(v, bytes):
            v = v.decode("utf-8", "replace")
        attrs[a.name] = v
    where = "SparseConv2d {}".format(node.name)
    allow_tf32_value(node)  # a value the plugin would refuse fails here too (FormatError naming the node)
    try:
        if int(attrs.get("format_version", -1)) != fmt.FORMAT_VERSION:
            raise FormatError("format_version {} is not {}".format(attrs.get("format_version"), fmt.FORMAT_VERSION))
        shape = [int(v) for v in attrs["weight_shape"]]
        if len(shape) != 4:
            raise FormatError("weight_shape must have 4 entries")
        mode_code = int(attrs.get("weight_format", 0))
        if mode_code not in (0, 1):
            raise FormatError("weight_format {} is not 0 (exact) or 1 (packed32)".format(mode_code))
        mode = fmt.MODES[mode_code]
        sw = fmt.from_arrays(shape, attrs, mode)
        bias = attrs.get("bias")
        if bias is not None and np.asarray(bias).size != shape[0]:
            raise FormatError("bias has {} entries, K = {}".format(np.asarray(bias).size, shape[0]))
        return dict(
            weight=sw, bias=bias,
            strides=tuple(int(v) for v in attrs["strides"]),
            pads=tuple(int(v) for v in attrs["pads"]),
            dilations=tuple(int(v) for v in attrs["dilations"]),
            activation=int(attrs.get("activation", 0)),
            clip_min=float(attrs.get("clip_min", 0.0)),
            clip_max=float(attrs.get("clip_max", 6.0)),
        )
    except KeyError as exc:
        raise TrtSparseError("{}: missing attribute {}".format(where, exc))
    except (FormatError, TypeError, ValueError) as exc:
        raise TrtSparseError("{}: {}".format(where, exc))


def _eval_sparse(node, params, x):
    from .reference import sparse_conv2d

    try:
        y = sparse_conv2d(x, **params)
    except TrtSparseError as exc:
        raise TrtSparseError("SparseConv2d {}: {}".format(node.name, exc))
    return y.astype(x.dtype if np.issubdtype(x.dtype, np.floating) else np.float32)


# -- split execution -----------------------------------------------------------------------
def _subgraph_inputs(node):
    """Names a node reads, including outer-scope names used inside its subgraphs."""
    names = [i for i in node.input if i]
    for a in node.attribute:
        graphs = [a.g] if a.type == onnx.AttributeProto.GRAPH else list(a.graphs) if a.type == onnx.AttributeProto.GRAPHS else []
        for g in graphs:
            local = {i.name for i in g.input} | {i.name for i in g.initializer}
            for n in g.node:
                for name in _subgraph_inputs(n):
                    if name not in local:
                        names.append(name)
                local.update(n.output)
    return names


def _toposort(graph, init_names):
    """Graph nodes in an order where every node follows its producers (stable for sorted graphs)."""
    nodes = list(graph.node)
    available = {vi.name for vi in graph.input} | set(init_names) | {""}
    done, out = [False] * len(nodes), []
    progress = True
    while progress and len(out) < len(nodes):
        progress = False
        for i, node in enumerate(nodes):
            if not done[i] and all(n in available for n in _subgraph_inputs(node)):
                done[i] = True
                out.append(node)
                available.update(node.output)
                progress = True
    if len(out) < len(nodes):
        stuck = [n for i, n in enumerate(nodes) if not done[i]][0]
        missing = [n for n in _subgraph_inputs(stuck) if n not in available]
        raise TrtSparseError("node {!r} reads {} which no node produces (or a cycle)".format(
            stuck.name or stuck.op_type, ", ".join(missing[:3])))
    return out


def _is_sparse(node):
    return node.op_type == PLUGIN_OP


class SplitRunner(object):
    """Runs a model with SparseConv2d nodes: onnxruntime for dense stages, the reference for sparse nodes."""

    def __init__(self, model, threads=0):
        self.model = model
        self.threads = threads
        graph = model.graph
        self.init_names = {i.name for i in graph.initializer}
        self.inits = {i.name: i for i in graph.initializer}
        self.outputs = [o.name for o in graph.output]
        self.opsets = [o for o in model.opset_import if o.domain != "trt_sparse"]
        level = {}
        for vi in graph.input:
            level[vi.name] = 0
        self.dense_stages = collections.defaultdict(list)
        self.sparse_stages = collections.defaultdict(list)
        reads = {}
        for node in _toposort(graph, self.init_names):
            ins = [i for i in _subgraph_inputs(node) if i not in self.init_names]
            reads[id(node)] = ins
            try:
                lv = max([level[i] for i in ins] or [0])
            except KeyError as exc:
                raise TrtSparseError("node {!r} reads {} before it is produced (graph not topologically sorted)".format(
                    node.name, exc))
            if _is_sparse(node):
                self.sparse_stages[lv].append(node)
                out_lv = lv + 1
            else:
                self.dense_stages[lv].append(node)
                out_lv = lv
            for o in node.output:
                if o:
                    level[o] = out_lv
        self.levels = sorted(set(self.dense_stages) | set(self.sparse_stages))
        self.reads = reads
        self.sparse_params = {}
        for nodes in self.sparse_stages.values():
            for node in nodes:
                if len([i for i in node.input if i]) != 1 or len(node.output) != 1:
                    raise TrtSparseError("SparseConv2d {}: expects one input and one output".format(node.name))
                self.sparse_params[id(node)] = sparse_node_params(node)
        # how many later reads each tensor has (to free memory early)
        self.read_count = collections.Counter()
        for ins in reads.values():
            self.read_count.update(set(ins))
        self._sessions = {}

    def _stage_model(self, nodes, values):
        produced = set(o for n in nodes for o in n.output if o)
        needed_in, seen = [], set()
        inits = []
        for n in nodes:
            for name in _subgraph_inputs(n):
                if name in seen or name in produced:
                    continue
                seen.add(name)
                if name in self.inits:
                    inits.append(self.inits[name])
                else:
                    needed_in.append(name)
        stage_ids = {id(n) for n in nodes}
        later_reads = set()
        for node in self.model.graph.node:
            if id(node) not in stage_ids:
                later_reads.update(self.reads[id(node)])
        outs = [o for o in sorted(produced) if o in later_reads or o in self.outputs]
        g_inputs = []
        for name in needed_in:
            arr = values[name]
            g_inputs.append(helper.make_tensor_value_info(
                name, helper.np_dtype_to_tensor_dtype(arr.dtype), list(arr.shape)))
        g = helper.make_graph(list(nodes), "stage", g_inputs, [onnx.ValueInfoProto(name=o) for o in outs],
                              initializer=inits)
        m = helper.make_model(g, opset_imports=self.opsets)
        m.ir_version = self.model.ir_version
        m.functions.extend(self.model.functions)
        return m, needed_in, outs

    def run(self, feeds):
        """dict output name -> array for ``feeds`` (dict input name -> array)."""
        values = dict(feeds)
        remaining = collections.Counter(self.read_count)

        def release(names):
            for name in set(names):
                remaining[name] -= 1
                if remaining[name] <= 0 and name not in self.outputs and name in values:
                    del values[name]

        for lv in self.levels:
            nodes = self.dense_stages.get(lv)
            if nodes:
                m, ins, outs = self._stage_model(nodes, values)
                if outs:
                    sess = _session(m.SerializeToString(), self.threads)
                    res = _run(sess, {n: values[n] for n in ins}, "dense stage {}".format(lv))
                    values.update(zip(outs, res))
                for n in nodes:
                    release(self.reads[id(n)])
            for node in self.sparse_stages.get(lv, []):
                x = values[node.input[0]]
                values[node.output[0]] = _eval_sparse(node, self.sparse_params[id(node)], x)
                release(self.reads[id(node)])
        missing = [o for o in self.outputs if o not in values]
        if missing:
            raise TrtSparseError("graph outputs {} were not computed".format(", ".join(missing)))
        return collections.OrderedDict((o, values[o]) for o in self.outputs)


_PROTO_LIMIT = 2 ** 31 - 1


def run_reference(model, feeds, threads=0, path=None):
    """Outputs of a model (with or without SparseConv2d nodes); dense parts in onnxruntime.

    A model without SparseConv2d nodes that is too large to serialize (> 2 GB) is
    loaded by onnxruntime from ``path`` (its file, external data beside it).
    """
    if not any(_is_sparse(n) for n in model.graph.node):
        if path is not None and model.ByteSize() >= _PROTO_LIMIT:
            sess = _session(os.fspath(path), threads)
        else:
            sess = _session(model.SerializeToString(), threads)
        names = [o.name for o in sess.get_outputs()]
        return collections.OrderedDict(zip(names, _run(sess, feeds, "the model")))
    return SplitRunner(model, threads).run(feeds)


# -- comparison ----------------------------------------------------------------------------
OutputError = collections.namedtuple("OutputError", "name shape max_abs scale rel passed")


class VerifyResult(object):
    """Per-output errors of a verification run."""

    def __init__(self, outputs, atol, rtol, seconds, input_shapes, seed):
        self.outputs = outputs
        self.atol, self.rtol = atol, rtol
        self.seconds = seconds
        self.input_shapes = input_shapes
        self.seed = seed

    @property
    def passed(self):
        """True when every output is within tolerance."""
        return all(o.passed for o in self.outputs)

    @property
    def max_rel(self):
        """Largest normalised error over the outputs."""
        return max([o.rel for o in self.outputs] or [0.0])

    @property
    def max_abs(self):
        """Largest absolute error over the outputs."""
        return max([o.max_abs for o in self.outputs] or [0.0])

    def summary(self):
        """One line: pass/fail and the worst errors."""
        return "verification {}: max relative error {:.3g} (max abs {:.3g}; tolerance atol {:g} + rtol {:g} * max|y|), " \
               "inputs {}, seed {}, {:.1f} s".format(
                   "passed" if self.passed else "FAILED", self.max_rel, self.max_abs, self.atol, self.rtol,
                   ", ".join("{}:{}".format(k, "x".join(str(d) for d in v)) for k, v in self.input_shapes.items()),
                   self.seed, self.seconds)

    def to_dict(self):
        """JSON-friendly dict."""
        return collections.OrderedDict([
            ("passed", self.passed), ("max_rel", self.max_rel), ("max_abs", self.max_abs),
            ("atol", self.atol), ("rtol", self.rtol), ("seed", self.seed), ("seconds", self.seconds),
            ("input_shapes", {k: list(v) for k, v in self.input_shapes.items()}),
            ("outputs", [collections.OrderedDict([
                ("name", o.name), ("shape", list(o.shape)), ("max_abs", o.max_abs), ("scale", o.scale),
                ("rel", o.rel), ("passed", o.passed)]) for o in self.outputs]),
        ])


def compare(ref, got, atol, rtol):
    """List of OutputError comparing dicts of arrays (by output name)."""
    if list(ref) != list(got):
        raise TrtSparseError("the models have different outputs: {} vs {}".format(list(ref), list(got)))
    out = []
    for name in ref:
        a = np.asarray(ref[name])
        b = np.asarray(got[name])
        if a.shape != b.shape:
            raise TrtSparseError("output {!r}: shape {} vs {}".format(name, a.shape, b.shape))
        if a.size == 0:
            out.append(OutputError(name, a.shape, 0.0, 0.0, 0.0, True))
            continue
        a64 = a.astype(np.float64)
        b64 = b.astype(np.float64)
        finite_a = np.isfinite(a64)
        same_nonfinite = bool(np.array_equal(finite_a, np.isfinite(b64)) and np.array_equal(
            a64[~finite_a], b64[~finite_a], equal_nan=True))
        diff = np.abs(a64[finite_a] - b64[finite_a]) if finite_a.any() else np.zeros(1)
        max_abs = float(diff.max()) if diff.size else 0.0
        scale = float(np.abs(a64[finite_a]).max()) if finite_a.any() else 0.0
        rel = max_abs / scale if scale > 0 else (0.0 if max_abs == 0 else float("inf"))
        passed = bool(same_nonfinite and max_abs <= atol + rtol * scale)
        if not same_nonfinite:
            rel = float("inf")
        out.append(OutputError(name, a.shape, max_abs, scale, rel, passed))
    return out


def verify_models(original, sparse, atol=None, rtol=None, input_shapes=None, batch=1, seed=0, mode="exact",
                  threads=0, original_path=None):
    """Run both models on the same seeded random inputs and compare every output (a VerifyResult).

    ``original_path`` lets onnxruntime load an original over 2 GB from its file.
    """
    t0 = time.time()
    atol = DEFAULT_ATOL if atol is None else float(atol)
    rtol = DEFAULT_RTOL.get(mode, DEFAULT_RTOL["exact"]) if rtol is None else float(rtol)
    feeds = make_inputs(original, input_shapes, batch, seed)
    ref = run_reference(original, feeds, threads, original_path)
    got = run_reference(sparse, feeds, threads)
    errs = compare(ref, got, atol, rtol)
    shapes = collections.OrderedDict((k, v.shape) for k, v in feeds.items())
    return VerifyResult(errs, atol, rtol, time.time() - t0, shapes, seed)


def weight_mode(model):
    """'packed32' if any SparseConv2d node of the model uses it, else 'exact'."""
    for n in model.graph.node:
        if _is_sparse(n):
            for a in n.attribute:
                if a.name == "weight_format" and a.i == 1:
                    return "packed32"
    return "exact"
