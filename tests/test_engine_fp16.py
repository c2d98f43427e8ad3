"""precision.convert_to_fp16: the fp16 model strongly typed TensorRT builds parse, checked in onnxruntime."""
import importlib.util
import os

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from trt_sparse.precision import convert_to_fp16, has_float16

_spec = importlib.util.spec_from_file_location(
    "_trt_sparse_engine_models", os.path.join(os.path.dirname(os.path.abspath(__file__)), "test_engine_models.py"))
M = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(M)
ort = pytest.importorskip("onnxruntime", reason="onnxruntime not installed (pip install -e '.[test]')")


def _rel(a, b):
    return float(np.abs(a.astype(np.float64) - b).max() / np.abs(a).max())


def _elem_type(vi):
    return vi.type.tensor_type.elem_type


def test_resnet18_fp16_within_1e2_relative_of_fp32():
    model = M.resnet18()  # full ResNet-18, 224x224, BN not folded
    half, stats = convert_to_fp16(model)
    assert stats.initializers == sum(1 for i in model.graph.initializer if i.data_type == TensorProto.FLOAT)
    assert stats.io_casts == 2 and stats.clamped == 0
    onnx.checker.check_model(half)
    x = np.random.default_rng(0).standard_normal((2, 3, 224, 224)).astype(np.float32)
    (ref,) = M.run_ort(model, {"input": x})
    (got,) = M.run_ort(half, {"input": x})
    assert got.dtype == np.float32  # I/O kept float32
    rel = _rel(ref, got)
    assert 0 < rel < 1e-2  # > 0: the model really ran in fp16


def test_io_types_kept_or_converted():
    model = M.tiny_convnet()
    half, _ = convert_to_fp16(model, keep_io_types=True)
    assert _elem_type(half.graph.input[0]) == TensorProto.FLOAT
    assert _elem_type(half.graph.output[0]) == TensorProto.FLOAT
    assert half.graph.node[0].op_type == "Cast" and half.graph.node[-1].op_type == "Cast"
    full, _ = convert_to_fp16(model, keep_io_types=False)
    assert _elem_type(full.graph.input[0]) == TensorProto.FLOAT16
    assert _elem_type(full.graph.output[0]) == TensorProto.FLOAT16
    x = np.random.default_rng(1).standard_normal((2, 3, 16, 16)).astype(np.float32)
    (ref,) = M.run_ort(model, {"x": x})
    (a,) = M.run_ort(half, {"x": x})
    (b,) = M.run_ort(full, {"x": x.astype(np.float16)})
    assert a.dtype == np.float32 and b.dtype == np.float16
    assert _rel(ref, a) < 1e-2 and _rel(ref, b) < 1e-2


def test_resize_scales_stay_float32_and_constants_convert():
    model = M.tiny_convnet()
    half, stats = convert_to_fp16(model)
    inits = {i.name: i for i in half.graph.initializer}
    resize = next(n for n in half.graph.node if n.op_type == "Resize")
    assert inits[resize.input[2]].data_type == TensorProto.FLOAT  # spec: scales are float32
    consts = [n for n in half.graph.node if n.op_type == "Constant"]
    assert len(consts) == 2 and stats.constants == 2
    for n in consts:
        value = next(a for a in n.attribute if a.name == "value")
        assert value.t.data_type == TensorProto.FLOAT16  # including the value_float form
    assert stats.kept_fp32 == 1


def test_input_model_not_modified_and_idempotence_marker():
    model = M.tiny_convnet()
    before = model.SerializeToString()
    half, _ = convert_to_fp16(model)
    assert model.SerializeToString() == before
    assert not has_float16(model) and has_float16(half)


def _single(op_nodes, inits, inputs, outputs):
    g = helper.make_graph(op_nodes, "g", inputs, outputs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def test_out_of_range_values_are_clamped_and_counted():
    w = numpy_helper.from_array(np.array([1e6, -1e6, 1.0, np.inf], np.float32), "w")
    m = _single([helper.make_node("Add", ["x", "w"], ["y"], name="add")], [w],
                [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])])
    half, stats = convert_to_fp16(m)
    assert stats.clamped == 2  # the two finite overflows; inf stays inf
    arr = numpy_helper.to_array(next(i for i in half.graph.initializer if i.name == "w"))
    assert arr.dtype == np.float16 and arr[0] == 65504 and arr[1] == -65504 and np.isinf(arr[3])


def test_cast_to_float_becomes_fp16_and_custom_op_attributes_untouched():
    sparse_attr = numpy_helper.from_array(np.array([0.5, 0.25], np.float32), "values")
    nodes = [
        helper.make_node("Cast", ["i"], ["f"], name="cast", to=TensorProto.FLOAT),
        helper.make_node("SparseConv2d", ["f"], ["y"], name="sc", values=sparse_attr, plugin_version="1"),
    ]
    m = _single(nodes, [], [helper.make_tensor_value_info("i", TensorProto.INT32, [1, 1, 2, 2])],
                [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, 2, 2])])
    half, stats = convert_to_fp16(m)
    cast = next(n for n in half.graph.node if n.name == "cast")
    assert next(a for a in cast.attribute if a.name == "to").i == TensorProto.FLOAT16 and stats.casts == 1
    sc = next(n for n in half.graph.node if n.op_type == "SparseConv2d")
    assert next(a for a in sc.attribute if a.name == "values").t.data_type == TensorProto.FLOAT
    # the int input is not cast; the float output gets a Cast back to float32 under its own name
    assert half.graph.node[-1].op_type == "Cast" and half.graph.node[-1].output[0] == "y"
    assert sc.output[0] != "y"
