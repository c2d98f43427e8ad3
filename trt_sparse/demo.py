"""The built-in demo: a small CNN built in code (onnx.helper), pruned, converted and verified.

The model has what real exporters produce: Conv + BatchNormalization + Relu, a
strided conv, a dilated conv with ReLU6 (Clip with Constant-node bounds), a 1x1
conv with ``auto_pad=SAME_UPPER`` and a residual Add, a depthwise conv (stays
dense: group > 1), then GlobalAveragePool / Flatten / Gemm. Dynamic batch.
"""
import collections
import os
import time

import numpy as np
from onnx import TensorProto, helper, numpy_helper

DEMO_INPUT = "image"
DEMO_HW = 64


def build_demo_model(seed=0, image_hw=DEMO_HW, opset=17):
    """Return the demo CNN as an onnx.ModelProto (random seeded weights, input [N, 3, H, W])."""
    rng = np.random.default_rng(seed)
    nodes, inits = [], []

    def init(name, arr):
        inits.append(numpy_helper.from_array(np.asarray(arr, dtype=np.float32), name))
        return name

    def conv(name, x, cin, cout, k, bias=True, **attrs):
        w = rng.standard_normal((cout, cin // attrs.get("group", 1), k, k)) * np.sqrt(2.0 / (cin * k * k))
        ins = [x, init(name + ".weight", w)]
        if bias:
            ins.append(init(name + ".bias", rng.uniform(-0.1, 0.1, cout)))
        nodes.append(helper.make_node("Conv", ins, [name + ".out"], name=name, **attrs))
        return name + ".out"

    def bn(name, x, c):
        ins = [x, init(name + ".gamma", rng.uniform(0.5, 1.5, c)), init(name + ".beta", rng.uniform(-0.2, 0.2, c)),
               init(name + ".mean", rng.uniform(-0.2, 0.2, c)), init(name + ".var", rng.uniform(0.5, 1.5, c))]
        nodes.append(helper.make_node("BatchNormalization", ins, [name + ".out"], name=name, epsilon=1e-5))
        return name + ".out"

    def op(kind, name, ins, **attrs):
        nodes.append(helper.make_node(kind, ins, [name + ".out"], name=name, **attrs))
        return name + ".out"

    x = DEMO_INPUT
    h = op("Relu", "stem.relu", [bn("stem.bn", conv("stem.conv", x, 3, 32, 3, bias=False, pads=[1, 1, 1, 1]), 32)])
    h = op("Relu", "down1.relu", [conv("down1.conv", h, 32, 64, 3, strides=[2, 2], pads=[1, 1, 1, 1])])
    lo = helper.make_node("Constant", [], ["relu6.min"], name="relu6.min.const",
                          value=numpy_helper.from_array(np.array(0.0, dtype=np.float32)))
    hi = helper.make_node("Constant", [], ["relu6.max"], name="relu6.max.const",
                          value=numpy_helper.from_array(np.array(6.0, dtype=np.float32)))
    nodes += [lo, hi]
    d = conv("dil.conv", h, 64, 64, 3, dilations=[2, 2], pads=[2, 2, 2, 2])
    d = op("Clip", "dil.relu6", [d, "relu6.min", "relu6.max"])
    p = conv("proj.conv", d, 64, 64, 1, auto_pad="SAME_UPPER")
    h = op("Relu", "res.relu", [op("Add", "res.add", [p, h])])
    h = op("Relu", "dw.relu", [conv("dw.conv", h, 64, 64, 3, group=64, pads=[1, 1, 1, 1])])
    h = op("Relu", "down2.relu", [bn("down2.bn", conv("down2.conv", h, 64, 128, 3, bias=False, strides=[2, 2],
                                                       pads=[1, 1, 1, 1]), 128)])
    h = op("Flatten", "flatten", [op("GlobalAveragePool", "gap", [h])])
    nodes.append(helper.make_node(
        "Gemm", [h, init("fc.weight", rng.standard_normal((10, 128)) * 0.1), init("fc.bias", np.zeros(10))],
        ["logits"], name="fc", transB=1))
    graph = helper.make_graph(
        nodes, "trt_sparse_demo",
        [helper.make_tensor_value_info(DEMO_INPUT, TensorProto.FLOAT, ["N", 3, image_hw, image_hw])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 10])],
        initializer=inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="trt-sparse demo")
    model.ir_version = 8
    helper.set_model_props(model, {"trt_sparse.demo": "1"})
    return model


def gpu_timing_note():
    """A line saying whether the demo can time the kernels here, and why not."""
    try:
        import importlib

        cuda = importlib.import_module("trt_sparse.cuda")
    except ImportError as exc:
        return None, "GPU timing skipped: trt_sparse.cuda is not available ({})".format(exc)
    avail = getattr(cuda, "available", None)
    try:
        ok = bool(avail()) if callable(avail) else False
    except Exception as exc:  # no driver, no device
        return None, "GPU timing skipped: {}".format(" ".join(str(exc).split())[:160])
    if not ok:
        return None, "GPU timing skipped: no CUDA device / kernel library found"
    return cuda, "GPU found"


def run_demo(out_dir, sparsity=0.9, weights="exact", seed=0, log=print):
    """Build, prune, convert and verify the demo model in ``out_dir``; returns a summary dict."""
    from .convert import ConvertOptions, check_output_model, convert_model
    from .onnx_io import save_model_atomic
    from .policy import ThresholdPolicy
    from .prune import format_rows, prune_model
    from .report import format_table, write_report
    from .verify import verify_models

    summary = collections.OrderedDict()
    t0 = time.time()
    dense_path = os.path.join(out_dir, "demo.onnx")
    pruned_path = os.path.join(out_dir, "demo.pruned.onnx")
    sparse_path = os.path.join(out_dir, "demo.sparse.onnx")
    report_path = os.path.join(out_dir, "demo.report.json")

    model = build_demo_model(seed)
    save_model_atomic(model, dense_path)
    log("[1/4] built a small CNN in ONNX: {} nodes, input {} [N, 3, {}, {}] -> {}".format(
        len(model.graph.node), DEMO_INPUT, DEMO_HW, DEMO_HW, dense_path))

    rows = prune_model(model, sparsity, scope="layer")
    save_model_atomic(model, pruned_path)
    log("[2/4] magnitude-pruned Conv weights to sparsity {} (no fine-tuning: speed demo only) -> {}"
        .format(sparsity, pruned_path))
    log("      " + format_rows(rows).splitlines()[-1])

    result = convert_model(model, ConvertOptions(policy=ThresholdPolicy(0.8), weights=weights))
    check_output_model(result.model)
    log("[3/4] converted: {} of {} Conv layers -> SparseConv2d (onnx.checker full check passed)".format(
        len(result.converted), len(result.layers)))

    result.verification = verify_models(model, result.model, mode=weights, batch=2, seed=seed)
    log("[4/4] " + result.verification.summary())
    if not result.verification.passed:
        from .errors import TrtSparseError

        raise TrtSparseError("demo verification failed: {}".format(result.verification.summary()))
    save_model_atomic(result.model, sparse_path, src_path=pruned_path)
    write_report(result, report_path, pruned_path, sparse_path)
    log("")
    log(format_table(result))
    log("")
    _cuda, note = gpu_timing_note()
    log(note)
    log("wrote {}, {} (build a TensorRT engine from it with the plugin library loaded: see docs/CONVERT.md)".format(
        sparse_path, report_path))
    summary.update(converted=len(result.converted), conv_layers=len(result.layers),
                   max_rel=result.verification.max_rel, passed=result.verification.passed,
                   sparse_model=sparse_path, report=report_path, seconds=time.time() - t0)
    return summary
