"""ONNX file I/O and Conv attribute helpers shared by inspect, prune and convert.

* :func:`load_model` / :func:`save_model_atomic` -- load with one-line errors,
  save through a temp file + ``os.replace`` (never a partial output, never over
  the input), optionally with external data for models over 2 GB.
* :func:`conv_params` -- a Conv node's attributes resolved to explicit
  strides / pads (top, left, bottom, right) / dilations / group (``auto_pad``
  included).
* :func:`constant_value` -- the numpy value of an initializer or Constant output.
* :func:`allow_tf32_value` / :func:`tf32_layers` -- the optional ``allow_tf32``
  attribute of ``SparseConv2d`` nodes (0 or 1, docs/FORMAT.md), validated.
"""
import os
import shutil
import tempfile
from collections import namedtuple

import numpy as np
import onnx
from onnx import numpy_helper

from .errors import FormatError, TrtSparseError, UnsupportedError

#: A Conv node's geometry; pads are (top, left, bottom, right) as in ONNX.
ConvParams = namedtuple("ConvParams", "name weight_shape strides pads dilations group")

_CONV_ATTRS = ("auto_pad", "dilations", "group", "kernel_shape", "pads", "strides")
_AUTO_PADS = ("NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER")


# -- loading / saving ------------------------------------------------------------------
def load_model(path, load_external_data=True):
    """Load an ONNX model (binary protobuf); raise TrtSparseError with a one-line reason if it cannot."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise TrtSparseError("no such file: {}".format(path))
    if os.path.isdir(path):
        raise TrtSparseError("{} is a directory, not an ONNX file".format(path))
    try:
        model = onnx.load_model(path, format="protobuf", load_external_data=False)
    except (OSError, PermissionError) as exc:
        raise TrtSparseError("cannot read {}: {}".format(path, exc.strerror or exc))
    except Exception as exc:  # protobuf DecodeError and friends
        raise TrtSparseError("{} is not an ONNX model (cannot parse it: {})".format(path, _one_line(exc)))
    if model.ir_version <= 0 or not model.HasField("graph") or not (model.graph.node or model.graph.output):
        raise TrtSparseError("{} is not an ONNX model (no ir_version or empty graph)".format(path))
    if load_external_data:
        try:
            onnx.external_data_helper.load_external_data_for_model(model, os.path.dirname(os.path.abspath(path)))
        except Exception as exc:
            raise TrtSparseError("cannot load the external data of {}: {}".format(path, _one_line(exc)))
    return model


def save_model_atomic(model, path, src_path=None, external_data=False):
    """Write ``model`` to ``path`` atomically (temp file in the same directory + os.replace).

    Refuses ``path`` equal to ``src_path`` (the input is never overwritten). With
    ``external_data`` the tensors go to ``<basename>.data`` beside ``path`` (needed
    above 2 GB); ``model`` keeps its in-memory tensor data either way.
    """
    path = os.fspath(path)
    out_dir = os.path.dirname(os.path.abspath(path))
    base = os.path.basename(path)
    if not base:
        raise TrtSparseError("output path {!r} names no file".format(path))
    if not os.path.isdir(out_dir):
        raise TrtSparseError("output directory does not exist: {}".format(out_dir))
    if os.path.isdir(path):
        raise TrtSparseError("output path {} is a directory".format(path))
    data_name = base + ".data"
    if src_path is not None:
        src = os.fspath(src_path)
        for target in (path, os.path.join(out_dir, data_name) if external_data else None):
            if target is not None and _same_file(target, src):
                raise TrtSparseError("refusing to overwrite the input {} (choose another output path)".format(src))
    if not external_data:
        fd, tmp = tempfile.mkstemp(prefix="." + base + ".", suffix=".tmp", dir=out_dir)
        os.close(fd)
        try:
            try:
                onnx.save_model(model, tmp, format="protobuf")
            except ValueError as exc:
                raise TrtSparseError(
                    "cannot serialize the model ({}); models over 2 GB need external data "
                    "(--external-data)".format(_one_line(exc))
                )
            os.chmod(tmp, _file_mode(path))
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        return
    tmp_dir = tempfile.mkdtemp(prefix="." + base + ".", suffix=".tmp", dir=out_dir)
    try:
        tmp_model = os.path.join(tmp_dir, base)
        onnx.save_model(
            model, tmp_model, format="protobuf", save_as_external_data=True,
            all_tensors_to_one_file=True, location=data_name,
        )
        tmp_data = os.path.join(tmp_dir, data_name)
        if os.path.exists(tmp_data):
            os.chmod(tmp_data, _file_mode(os.path.join(out_dir, data_name)))
            os.replace(tmp_data, os.path.join(out_dir, data_name))
        os.chmod(tmp_model, _file_mode(path))
        os.replace(tmp_model, path)
        # onnx moved the tensor bytes out of ``model``; put them back from the written file
        onnx.external_data_helper.load_external_data_for_model(model, out_dir)
    finally:
        shutil.rmtree(tmp_dir, ignore_errors=True)


def _file_mode(path):
    """Permission bits for a new ``path``: those of the file it replaces, else 0o666 minus the umask."""
    try:
        return os.stat(path).st_mode & 0o7777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def _same_file(a, b):
    if os.path.exists(a) and os.path.exists(b):
        return os.path.samefile(a, b)
    return os.path.realpath(a) == os.path.realpath(b)


def _one_line(exc):
    text = " ".join(str(exc).split())
    return text[:300] if text else type(exc).__name__


# -- attributes ------------------------------------------------------------------------
def node_attributes(node):
    """dict attribute name -> python value (str for STRING, list for INTS, ndarray for TENSOR)."""
    out = {}
    for attr in node.attribute:
        val = onnx.helper.get_attribute_value(attr)
        if isinstance(val, bytes):
            val = val.decode("utf-8", "replace")
        elif isinstance(val, onnx.TensorProto):
            val = numpy_helper.to_array(val)
        out[attr.name] = val
    return out


#: Optional INT attribute of a SparseConv2d node: 1 lets the plugin run fp32 layers with the kernels'
#: TF32 tensor-core variants (docs/FORMAT.md); absent or 0 keeps exact fp32 math.
ALLOW_TF32_ATTR = "allow_tf32"


def _node_label(node):
    return "{} {}".format(node.op_type or "node", node.name or "(output {})".format(
        node.output[0] if node.output else "?"))


def allow_tf32_value(node):
    """0 or 1: the ``allow_tf32`` attribute of a SparseConv2d NodeProto (absent means 0).

    Anything but an INT attribute (the type docs/FORMAT.md specifies and the converter writes) of value
    0 or 1 raises FormatError naming the node; the plugin's creator refuses every other value too.
    """
    for attr in node.attribute:
        if attr.name != ALLOW_TF32_ATTR:
            continue
        if attr.type != onnx.AttributeProto.INT:
            raise FormatError("{}: attribute {} must be an INT (0 or 1), got {}".format(
                _node_label(node), ALLOW_TF32_ATTR, onnx.AttributeProto.AttributeType.Name(attr.type)))
        if attr.i not in (0, 1):
            raise FormatError("{}: attribute {} = {} is not 0 (exact fp32) or 1 (TF32 allowed)".format(
                _node_label(node), ALLOW_TF32_ATTR, attr.i))
        return int(attr.i)
    return 0


def tf32_layers(model, op_type="SparseConv2d"):
    """Names of the main graph's ``op_type`` nodes with allow_tf32 = 1 (every such node validated)."""
    graph = model.graph if isinstance(model, onnx.ModelProto) else model
    return [n.name for n in graph.node if n.op_type == op_type and allow_tf32_value(n) == 1]


def _ints(node_name, attrs, key, length, default, minimum):
    val = attrs.get(key)
    if val is None:
        return tuple(default)
    if isinstance(val, onnx.AttributeProto):
        val = onnx.helper.get_attribute_value(val)
    try:
        vals = tuple(int(v) for v in val)
    except TypeError:
        raise UnsupportedError("Conv {}: attribute {} must be a list of ints, got {!r}".format(node_name, key, val))
    if len(vals) != length:
        raise UnsupportedError(
            "Conv {}: attribute {} has {} entries, a 2-D Conv needs {}".format(node_name, key, len(vals), length)
        )
    if any(v < minimum for v in vals):
        raise UnsupportedError("Conv {}: attribute {} = {} has entries < {}".format(node_name, key, list(vals), minimum))
    return vals


def conv_params(node_name, attrs, weight_shape, input_hw=None):
    """Resolve a Conv node's attributes to a :class:`ConvParams` (pads top, left, bottom, right).

    ``attrs`` maps attribute names to values (see :func:`node_attributes`);
    ``input_hw`` (H, W) is needed only for ``auto_pad`` SAME_UPPER / SAME_LOWER.
    Raises UnsupportedError naming the node for non-2-D convs, unknown attributes
    or values, and SAME padding without a known input size.
    """
    attrs = dict(attrs)
    for key, val in list(attrs.items()):
        if isinstance(val, onnx.AttributeProto):
            val = onnx.helper.get_attribute_value(val)
        if isinstance(val, bytes):
            val = val.decode("utf-8", "replace")
        attrs[key] = val
    unknown = sorted(set(attrs) - set(_CONV_ATTRS))
    if unknown:
        raise UnsupportedError("Conv {}: unsupported attribute(s) {}".format(node_name, ", ".join(unknown)))
    try:
        wshape = tuple(int(v) for v in weight_shape)
    except (TypeError, ValueError):
        raise UnsupportedError("Conv {}: weight shape {!r} is not static".format(node_name, weight_shape))
    if len(wshape) != 4:
        raise UnsupportedError(
            "Conv {}: only 2-D convolutions are supported (weight rank {}, shape {})".format(
                node_name, len(wshape), list(wshape))
        )
    if min(wshape) < 1:
        raise UnsupportedError("Conv {}: weight shape {} has an empty dimension".format(node_name, list(wshape)))
    kernel = _ints(node_name, attrs, "kernel_shape", 2, wshape[2:], 1)
    if kernel != wshape[2:]:
        raise UnsupportedError(
            "Conv {}: kernel_shape {} does not match the weight shape {}".format(node_name, list(kernel), list(wshape))
        )
    strides = _ints(node_name, attrs, "strides", 2, (1, 1), 1)
    dilations = _ints(node_name, attrs, "dilations", 2, (1, 1), 1)
    try:
        group = int(attrs.get("group", 1))
    except (TypeError, ValueError):
        raise UnsupportedError("Conv {}: attribute group must be an int".format(node_name))
    if group < 1:
        raise UnsupportedError("Conv {}: group = {} must be >= 1".format(node_name, group))
    auto_pad = attrs.get("auto_pad", "NOTSET") or "NOTSET"
    if auto_pad not in _AUTO_PADS:
        raise UnsupportedError("Conv {}: unknown auto_pad {!r}".format(node_name, auto_pad))
    explicit = _ints(node_name, attrs, "pads", 4, (0, 0, 0, 0), 0)
    if auto_pad == "NOTSET":
        pads = explicit
    elif any(explicit):
        raise UnsupportedError("Conv {}: pads {} given together with auto_pad {}".format(node_name, list(explicit), auto_pad))
    elif auto_pad == "VALID":
        pads = (0, 0, 0, 0)
    else:
        hw = None
        if input_hw is not None and len(input_hw) == 2:
            try:
                hw = tuple(int(v) for v in input_hw)
            except (TypeError, ValueError):
                hw = None
        if hw is None or min(hw) < 1:
            raise UnsupportedError(
                "Conv {}: auto_pad {} needs a static input height/width (got {!r})".format(node_name, auto_pad, input_hw)
            )
        begin, end = [], []
        for size, k, st, dl in zip(hw, kernel, strides, dilations):
            out = (size + st - 1) // st
            total = max(0, (out - 1) * st + (k - 1) * dl + 1 - size)
            head = (total + 1) // 2 if auto_pad == "SAME_LOWER" else total // 2
            begin.append(head)
            end.append(total - head)
        pads = (begin[0], begin[1], end[0], end[1])
    return ConvParams(node_name, wshape, strides, tuple(pads), dilations, group)


# -- constants and shapes ------------------------------------------------------------------
def constant_value(graph, name, base_dir=""):
    """numpy value of ``name`` if it is an initializer or a Constant node's output, else None."""
    if isinstance(graph, onnx.ModelProto):
        graph = graph.graph
    for init in graph.initializer:
        if init.name == name:
            return _to_array(init, base_dir, name)
    for node in graph.node:
        if node.op_type == "Constant" and node.domain in ("", "ai.onnx") and name in node.output:
            return _constant_node_value(node, base_dir)
    return None


def _to_array(tensor, base_dir, name):
    try:
        return numpy_helper.to_array(tensor, base_dir)
    except Exception as exc:
        raise TrtSparseError("cannot read tensor {}: {}".format(name, _one_line(exc)))


def _constant_node_value(node, base_dir=""):
    for attr in node.attribute:
        if attr.name == "value":
            return _to_array(attr.t, base_dir, node.output[0])
        if attr.name == "value_float":
            return np.array(attr.f, dtype=np.float32)
        if attr.name == "value_floats":
            return np.array(list(attr.floats), dtype=np.float32)
        if attr.name == "value_int":
            return np.array(attr.i, dtype=np.int64)
        if attr.name == "value_ints":
            return np.array(list(attr.ints), dtype=np.int64)
    return None  # sparse_value / strings: not a dense numeric constant


def tensor_shapes(model):
    """dict tensor name -> tuple of dims (int, or None when symbolic/unknown), via shape inference."""
    try:
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False)
    except Exception:
        inferred = model
    graph = inferred.graph
    shapes = {}
    for vi in list(graph.input) + list(graph.value_info) + list(graph.output):
        t = vi.type.tensor_type
        if not t.HasField("shape"):
            continue
        shapes[vi.name] = tuple(d.dim_value if d.HasField("dim_value") else None for d in t.shape.dim)
    for init in graph.initializer:
        shapes[init.name] = tuple(int(d) for d in init.dims)
    return shapes
