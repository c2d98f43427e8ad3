"""Shared pytest fixtures: one-node ONNX Conv models and onnxruntime execution."""
import os
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:  # plain `pytest` (not `python -m pytest`) without an install
    sys.path.insert(0, ROOT)

try:  # hypothesis profiles: CI keeps example counts as written, no deadline
    from hypothesis import HealthCheck, settings

    settings.register_profile(
        "trt-sparse", deadline=None, suppress_health_check=[HealthCheck.too_slow], print_blob=True
    )
    settings.load_profile("trt-sparse")
except ImportError:  # pragma: no cover - hypothesis is in the test extra
    pass


def make_conv_model(x_shape, weight, bias=None, strides=None, pads=None, dilations=None,
                    auto_pad=None, group=None, opset=17, name="conv0", weight_as_constant=False,
                    activation=0, clip_min=0.0, clip_max=6.0):
    """An ONNX model ``y = act(Conv(x, W[, B]))`` with W (and B) as initializers (or a Constant node).

    ``activation``: 0 none, 1 Relu, 2 Clip(clip_min, clip_max) (docs/FORMAT.md codes).
    """
    from onnx import TensorProto, helper, numpy_helper

    weight = np.asarray(weight, dtype=np.float32)
    inputs = ["x", "W"]
    inits, nodes = [], []
    w_tensor = numpy_helper.from_array(weight, "W")
    if weight_as_constant:
        nodes.append(helper.make_node("Constant", [], ["W"], value=w_tensor, name="W_const"))
    else:
        inits.append(w_tensor)
    if bias is not None:
        inits.append(numpy_helper.from_array(np.asarray(bias, dtype=np.float32), "B"))
        inputs.append("B")
    attrs = {}
    if strides is not None:
        attrs["strides"] = list(strides)
    if pads is not None:
        attrs["pads"] = list(pads)
    if dilations is not None:
        attrs["dilations"] = list(dilations)
    if auto_pad is not None:
        attrs["auto_pad"] = auto_pad
    if group is not None:
        attrs["group"] = group
    conv_out = "y" if not activation else "conv_y"
    nodes.append(helper.make_node("Conv", inputs, [conv_out], name=name, **attrs))
    if activation == 1:
        nodes.append(helper.make_node("Relu", [conv_out], ["y"], name=name + "_relu"))
    elif activation == 2:
        inits.append(numpy_helper.from_array(np.array(clip_min, np.float32), "clip_min"))
        inits.append(numpy_helper.from_array(np.array(clip_max, np.float32), "clip_max"))
        nodes.append(helper.make_node("Clip", [conv_out, "clip_min", "clip_max"], ["y"], name=name + "_clip"))
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        initializer=inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def run_ort(model, feeds):
    """Run a ModelProto with onnxruntime on CPU; returns the list of outputs."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    opts.log_severity_level = 3
    sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


@pytest.fixture(scope="session")
def conv_model():
    """Factory fixture: see :func:`make_conv_model`."""
    return make_conv_model


@pytest.fixture(scope="session")
def ort_run():
    """Factory fixture: see :func:`run_ort`."""
    pytest.importorskip("onnxruntime", reason="onnxruntime not installed (pip install -e '.[test]')")
    return run_ort
