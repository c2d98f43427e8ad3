"""FP16 conversion of an ONNX model, for strongly typed TensorRT builds.

TensorRT >= 11 and TensorRT-RTX only build *strongly typed* networks: a layer
runs in the type of its tensors, the FP16 builder flag no longer exists. To get
an fp16 engine the ONNX model itself must carry fp16 tensors.
:func:`convert_to_fp16` rewrites float32 initializers, ``Constant`` /
``ConstantOfShape`` values, ``Cast(to=FLOAT)`` and the declared tensor types to
float16, and by default keeps the graph's inputs and outputs float32 by adding
``Cast`` nodes at the boundary (the same I/O a weakly typed FP16 build of
TensorRT 8.x/10.x has).

Kept float32 on purpose: tensors the ONNX spec requires to be float
(``Resize`` roi/scales, ``Upsample`` scales) and the float computations feeding
only them; attributes of non-standard ops (e.g. ``SparseConv2d``: its weights
stay exact float32 attributes, the plugin converts them when it runs in fp16).
"""
import collections

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from .errors import UnsupportedError

FP16_MAX = float(np.finfo(np.float16).max)

#: (op_type, input index) of standard-op inputs the spec requires to stay float32
FLOAT32_INPUTS = {("Resize", 1), ("Resize", 2), ("Upsample", 1)}

_STANDARD_DOMAINS = ("", "ai.onnx")

Fp16Stats = collections.namedtuple("Fp16Stats", "initializers constants casts clamped kept_fp32 io_casts")


def _is_standard(node):
    return node.domain in _STANDARD_DOMAINS


def _fp32_keep_set(graph):
    """Names of float tensors that must stay float32 (spec-mandated float inputs and their producers)."""
    keep = set()
    for node in graph.node:
        if not _is_standard(node):
            continue
        for idx, name in enumerate(node.input):
            if name and (node.op_type, idx) in FLOAT32_INPUTS:
                keep.add(name)
    producers = {}
    for node in graph.node:
        for out in node.output:
            producers[out] = node
    consumers = collections.defaultdict(list)
    for node in graph.node:
        for idx, name in enumerate(node.input):
            consumers[name].append((node, idx))

    def only_feeds_keep(name):
        uses = consumers.get(name, [])
        return bool(uses) and all(
            (n.op_type, i) in FLOAT32_INPUTS or all(o in keep for o in n.output) for n, i in uses
        )

    # walk producers backwards: a standard node whose outputs are all kept float32
    # computes in float32, so its inputs stay float32 too (stop at Cast / shape ops)
    work = list(keep)
    while work:
        name = work.pop()
        node = producers.get(name)
        if node is None or not _is_standard(node) or node.op_type in ("Cast", "Shape", "Size"):
            continue
        if not all(o in keep for o in node.output if o):
            continue
        for inp in node.input:
            if inp and inp not in keep and only_feeds_keep(inp):
                keep.add(inp)
                work.append(inp)
    return keep


def _to_fp16_tensor(tensor, counter):
    arr = numpy_helper.to_array(tensor)
    big = np.abs(arr) > FP16_MAX
    finite = np.isfinite(arr)
    n_clamped = int(np.count_nonzero(big & finite))
    if n_clamped:
        arr = np.where(big & finite, np.sign(arr) * FP16_MAX, arr)
    counter["clamped"] += n_clamped
    out = numpy_helper.from_array(arr.astype(np.float16), tensor.name)
    out.doc_string = tensor.doc_string
    return out


def _convert_value_info(vi, keep):
    tt = vi.type.tensor_type if vi.type.HasField("tensor_type") else None
    if tt is not None and tt.elem_type == TensorProto.FLOAT and vi.name not in keep:
        tt.elem_type = TensorProto.FLOAT16
        return True
    return False


def _convert_graph(graph, counter, keep_io):
    keep = _fp32_keep_set(graph)
    counter["kept_fp32"] += len(keep)
    for i, init in enumerate(graph.initializer):
        if init.data_type == TensorProto.FLOAT and init.name not in keep:
            if init.data_location == TensorProto.EXTERNAL:
                raise UnsupportedError(
                    "initializer {} still has external data; load the model with its data first".format(init.name)
                )
            graph.initializer[i].CopyFrom(_to_fp16_tensor(init, counter))
            counter["initializers"] += 1
    for node in graph.node:
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                _convert_graph(attr.g, counter, keep_io=False)
            elif attr.type == onnx.AttributeProto.GRAPHS:
                for g in attr.graphs:
                    _convert_graph(g, counter, keep_io=False)
        if not _is_standard(node):
            continue
        if any(o in keep for o in node.output if o):
            continue
        if node.op_type in ("Constant", "ConstantOfShape"):
            for attr in node.attribute:
                if attr.name == "value" and attr.t.data_type == TensorProto.FLOAT:
                    attr.t.CopyFrom(_to_fp16_tensor(attr.t, counter))
                    counter["constants"] += 1
                elif attr.name in ("value_float", "value_floats"):
                    # Constant(value_float=...) -> a float16 tensor value
                    if attr.name == "value_float":
                        arr = np.array(attr.f, dtype=np.float32)
                    else:
                        arr = np.array(list(attr.floats), dtype=np.float32)
                    tensor = numpy_helper.from_array(arr, "")
                    node.attribute.remove(attr)
                    node.attribute.extend([helper.make_attribute("value", _to_fp16_tensor(tensor, counter))])
                    counter["constants"] += 1
                    break
        elif node.op_type in ("Cast", "EyeLike", "RandomNormalLike", "RandomUniformLike"):
            attr_name = "to" if node.op_type == "Cast" else "dtype"
            for attr in node.attribute:
                if attr.name == attr_name and attr.i == TensorProto.FLOAT:
                    attr.i = TensorProto.FLOAT16
                    counter["casts"] += 1
    io_names = set()
    if keep_io:
        io_names = {vi.name for vi in graph.input} | {vi.name for vi in graph.output}
    for vi in graph.value_info:
        _convert_value_info(vi, keep)
    for vi in list(graph.input) + list(graph.output):
        if vi.name not in io_names:
            _convert_value_info(vi, keep)
    if keep_io:
        _add_io_casts(graph, keep, counter)


def _unique(name, used):
    candidate, i = name, 0
    while candidate in used:
        i += 1
        candidate = "{}_{}".format(name, i)
    used.add(candidate)
    return candidate


def _is_float(vi):
    return vi.type.HasField("tensor_type") and vi.type.tensor_type.elem_type == TensorProto.FLOAT


def _rename_refs(graph, old, new, outputs):
    """Point every node input named ``old`` (and, with ``outputs``, every node output) at ``new``."""
    for node in graph.node:
        if outputs:
            for idx, name in enumerate(node.output):
                if name == old:
                    node.output[idx] = new
        for idx, name in enumerate(node.input):
            if name == old:
                node.input[idx] = new


def _add_io_casts(graph, keep, counter):
    used = {n for node in graph.node for n in list(node.input) + list(node.output)}
    used |= {i.name for i in graph.initializer} | {v.name for v in graph.input} | {v.name for v in graph.output}
    used |= {n.name for n in graph.node}
    input_names = {v.name for v in graph.input}
    init_names = {i.name for i in graph.initializer}
    new_front, new_back = [], []
    for vi in graph.input:
        if not _is_float(vi) or vi.name in keep or vi.name in init_names:
            continue
        casted = _unique(vi.name + "_fp16", used)
        _rename_refs(graph, vi.name, casted, outputs=False)
        new_front.append(helper.make_node("Cast", [vi.name], [casted], name=_unique("Cast_in_" + vi.name, used),
                                          to=TensorProto.FLOAT16))
        counter["io_casts"] += 1
    for vi in graph.output:
        if not _is_float(vi) or vi.name in keep or vi.name in input_names:
            continue
        half = _unique(vi.name + "_fp16", used)
        _rename_refs(graph, vi.name, half, outputs=True)
        if vi.name in init_names:  # output is an initializer: cast it like any producer
            new_front.append(helper.make_node("Identity", [vi.name], [half], name=_unique("Id_" + vi.name, used)))
        new_back.append(helper.make_node("Cast", [half], [vi.name], name=_unique("Cast_out_" + vi.name, used),
                                         to=TensorProto.FLOAT))
        counter["io_casts"] += 1
    nodes = new_front + list(graph.node) + new_back
    del graph.node[:]
    graph.node.extend(nodes)


def convert_to_fp16(model, keep_io_types=True):
    """Return (fp16 copy of ``model``, Fp16Stats); ``model`` itself is not modified.

    With ``keep_io_types`` float32 graph inputs/outputs stay float32 (Cast nodes
    are added at the boundary); otherwise they become float16.
    Values beyond the fp16 range are clamped to +-65504 (counted in ``clamped``).
    """
    out = onnx.ModelProto()
    out.CopyFrom(model)
    counter = collections.Counter()
    _convert_graph(out.graph, counter, keep_io_types)
    for func in out.functions:
        for node in func.node:
            if _is_standard(node) and node.op_type == "Cast":
                for attr in node.attribute:
                    if attr.name == "to" and attr.i == TensorProto.FLOAT:
                        attr.i = TensorProto.FLOAT16
                        counter["casts"] += 1
    stats = Fp16Stats(*(counter[f] for f in Fp16Stats._fields))
    return out, stats


def has_float16(model):
    """True when any initializer or graph input of ``model`` is float16 (already converted)."""
    g = model.graph
    return any(i.data_type == TensorProto.FLOAT16 for i in g.initializer) or any(
        vi.type.tensor_type.elem_type == TensorProto.FLOAT16 for vi in g.input if vi.type.HasField("tensor_type")
    )
