"""Small ONNX models built with onnx.helper for the engine/precision/runtime tests.

Other test modules load this file by path (importlib, spec_from_file_location) so
that no package layout of tests/ is assumed. The few tests here check the builders.
"""
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


class _Builder:
    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits, self.n = [], [], 0

    def name(self, prefix):
        self.n += 1
        return "{}_{}".format(prefix, self.n)

    def init(self, prefix, arr):
        name = self.name(prefix)
        arr = np.asarray(arr)
        assert arr.dtype in (np.float32, np.int64), arr.dtype
        self.inits.append(numpy_helper.from_array(arr, name))
        return name

    def conv(self, x, cin, cout, k, stride=1, pad=0, bias=False):
        w = (self.rng.standard_normal((cout, cin, k, k)) * np.sqrt(2.0 / (cin * k * k))).astype(np.float32)
        ins = [x, self.init("W", w)]
        if bias:
            ins.append(self.init("B", (self.rng.standard_normal(cout) * 0.1).astype(np.float32)))
        out = self.name("conv")
        self.nodes.append(helper.make_node("Conv", ins, [out], name=out, kernel_shape=[k, k],
                                           strides=[stride, stride], pads=[pad] * 4))
        return out

    def bn(self, x, c):
        r = self.rng
        ins = [x, self.init("gamma", (1.0 + 0.1 * r.standard_normal(c)).astype(np.float32)),
               self.init("beta", (0.1 * r.standard_normal(c)).astype(np.float32)),
               self.init("mean", (0.1 * r.standard_normal(c)).astype(np.float32)),
               self.init("var", (1.0 + 0.1 * r.random(c)).astype(np.float32))]
        out = self.name("bn")
        self.nodes.append(helper.make_node("BatchNormalization", ins, [out], name=out, epsilon=1e-5))
        return out

    def op(self, op_type, ins, **attrs):
        out = self.name(op_type.lower())
        self.nodes.append(helper.make_node(op_type, ins, [out], name=out, **attrs))
        return out


def resnet18(path=None, num_classes=1000, hw=224, batch="N", seed=0, width=64):
    """ResNet-18 (torchvision layout, random He-initialised weights, BN not folded).

    ``width`` scales the channel counts (64 = the real network). Returns the ModelProto
    and saves it to ``path`` when given.
    """
    b = _Builder(seed)
    x = b.op("Relu", [b.bn(b.conv("input", 3, width, 7, 2, 3), width)])
    x = b.op("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin = width
    for stage, cout in enumerate([width, 2 * width, 4 * width, 8 * width]):
        for block in range(2):
            stride = 2 if (stage > 0 and block == 0) else 1
            y = b.op("Relu", [b.bn(b.conv(x, cin, cout, 3, stride, 1), cout)])
            y = b.bn(b.conv(y, cout, cout, 3, 1, 1), cout)
            shortcut = x
            if stride != 1 or cin != cout:
                shortcut = b.bn(b.conv(x, cin, cout, 1, stride, 0), cout)
            x = b.op("Relu", [b.op("Add", [y, shortcut])])
            cin = cout
    x = b.op("Flatten", [b.op("GlobalAveragePool", [x])], axis=1)
    fc_w = b.init("fc_w", (b.rng.standard_normal((num_classes, cin)) / np.sqrt(cin)).astype(np.float32))
    fc_b = b.init("fc_b", np.zeros(num_classes, np.float32))
    b.nodes.append(helper.make_node("Gemm", [x, fc_w, fc_b], ["output"], name="fc", transB=1))
    graph = helper.make_graph(
        b.nodes, "resnet18",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [batch, 3, hw, hw])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [batch, num_classes])],
        b.inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="trt-sparse-tests")
    model.ir_version = 8
    onnx.checker.check_model(model)
    if path:
        onnx.save(model, str(path))
    return model


def tiny_convnet(path=None, batch="N", seed=0, hw=16):
    """Conv-BN-Relu-Conv-Relu6(Clip)-Resize-GlobalAveragePool: small, with Constant/Clip/Resize nodes."""
    b = _Builder(seed)
    x = b.op("Relu", [b.bn(b.conv("x", 3, 8, 3, 1, 1), 8)])
    x = b.conv(x, 8, 8, 3, 2, 1, bias=True)
    lo = b.name("clip_lo")
    hi = b.name("clip_hi")
    b.nodes.append(helper.make_node("Constant", [], [lo], name=lo, value_float=0.0))
    b.nodes.append(helper.make_node("Constant", [], [hi], name=hi,
                                    value=numpy_helper.from_array(np.array(6.0, np.float32))))
    x = b.op("Clip", [x, lo, hi])
    scales = b.init("scales", np.array([1.0, 1.0, 2.0, 2.0], np.float32))
    x = b.op("Resize", [x, "", scales], mode="nearest")
    x = b.op("GlobalAveragePool", [x])
    b.nodes.append(helper.make_node("Flatten", [x], ["y"], name="flatten", axis=1))
    graph = helper.make_graph(
        b.nodes, "tiny",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 3, hw, hw])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 8])],
        b.inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    if path:
        onnx.save(model, str(path))
    return model


def run_ort(model, feeds):
    """Run ``model`` (ModelProto) in onnxruntime on the CPU; return the list of outputs."""
    import onnxruntime as ort

    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def test_resnet18_builder_shapes():
    model = resnet18(width=8, hw=64, num_classes=10)
    x = np.random.default_rng(1).standard_normal((2, 3, 64, 64)).astype(np.float32)
    (y,) = run_ort(model, {"input": x})
    assert y.shape == (2, 10) and np.isfinite(y).all()
    n_conv = sum(1 for n in model.graph.node if n.op_type == "Conv")
    assert n_conv == 20  # 1 stem + 16 block convs + 3 downsample convs


def test_tiny_convnet_runs():
    (y,) = run_ort(tiny_convnet(), {"x": np.ones((1, 3, 16, 16), np.float32)})
    assert y.shape == (1, 8) and (y >= 0).all() and (y <= 6).all()
