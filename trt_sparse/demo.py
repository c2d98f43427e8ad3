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


def _have_onnxruntime():
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        return False
    return True


def gpu_timing_note():
    """(torch module, note): torch with a CUDA device and the kernel library, or None and why not."""
    try:
        import torch
    except ImportError:
        return None, "GPU timing skipped: torch is not installed (it allocates the device buffers)"
    try:
        if not torch.cuda.is_available():
            return None, "GPU timing skipped: no CUDA device visible to torch"
        from .cuda import load_library

        load_library()
    except Exception as exc:  # no driver, no kernel library, ABI mismatch
        return None, "GPU timing skipped: {}".format(" ".join(str(exc).split())[:200])
    return torch, "GPU found: {}".format(torch.cuda.get_device_name(0))


def _cuda_time_us(torch, fn, iters):
    fn()
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        fn()
    stop.record()
    torch.cuda.synchronize()
    return start.elapsed_time(stop) * 1000.0 / iters


def time_layers_on_gpu(torch, result, batch=8, iters=50, log=print):
    """Time each converted layer: the sparse kernel plan vs torch's dense conv2d (cuDNN), fp32.

    Also checks the sparse output against the dense one. Returns a list of dict rows.
    """
    import torch.nn.functional as F

    from .cuda import SparseConvPlan
    from .format import unpack
    from .verify import sparse_node_params

    nodes = {n.name: n for n in result.model.graph.node if n.op_type == "SparseConv2d"}
    rows = []
    log("{:<12} {:>10} {:>10} {:>8} {:>10}".format("layer", "sparse us", "dense us", "speedup", "max diff"))
    for layer in result.converted:
        if not layer.input_hw or layer.name not in nodes:
            continue
        p = sparse_node_params(nodes[layer.name])
        k, c, r, s = p["weight"].shape
        h, w = layer.input_hw
        x = torch.randn(batch, c, h, w, device="cuda")
        plan = SparseConvPlan(p["weight"], p["bias"], p["strides"], p["pads"], p["dilations"], p["activation"],
                              p["clip_min"], p["clip_max"], dtype="fp32")
        y = torch.empty(plan.output_shape(tuple(x.shape)), device="cuda")
        ws_bytes = plan.workspace_size(batch, h, w)
        ws = torch.empty(ws_bytes, dtype=torch.uint8, device="cuda") if ws_bytes else None
        plan.tune(x, y, ws)
        wd = torch.from_numpy(unpack(p["weight"])).cuda()
        bd = torch.from_numpy(p["bias"].astype("float32")).cuda() if p["bias"] is not None else None
        pt, pl, pb, pr = p["pads"]

        def dense():
            out = F.conv2d(F.pad(x, (pl, pr, pt, pb)), wd, bd, stride=p["strides"], dilation=p["dilations"])
            if p["activation"] == 1:
                out = torch.relu(out)
            elif p["activation"] == 2:
                out = torch.clamp(out, p["clip_min"], p["clip_max"])
            return out

        sparse_us = _cuda_time_us(torch, lambda: plan.enqueue(x, y, ws), iters)
        dense_us = _cuda_time_us(torch, dense, iters)
        diff = float((dense() - y).abs().max())
        plan.close()
        rows.append({"layer": layer.name, "sparse_us": sparse_us, "dense_us": dense_us, "max_diff": diff})
        log("{:<12} {:>10.1f} {:>10.1f} {:>7.2f}x {:>10.2e}".format(
            layer.name[-12:], sparse_us, dense_us, dense_us / sparse_us, diff))
    return rows


def run_demo(out_dir, sparsity=0.9, weights="auto", seed=0, log=print):
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

    if _have_onnxruntime():
        result.verification = verify_models(model, result.model, mode=weights, batch=2, seed=seed)
        log("[4/4] " + result.verification.summary())
        if not result.verification.passed:
            from .errors import TrtSparseError

            raise TrtSparseError("demo verification failed: {}".format(result.verification.summary()))
    else:
        log("[4/4] verification skipped: onnxruntime is not installed (pip install 'trt-sparse[verify]')")
    save_model_atomic(result.model, sparse_path, src_path=pruned_path)
    write_report(result, report_path, pruned_path, sparse_path)
    log("")
    log(format_table(result))
    log("")
    torch, note = gpu_timing_note()
    log(note)
    if torch is not None:
        try:
            summary["gpu"] = time_layers_on_gpu(torch, result, log=log)
        except Exception as exc:  # timing is a bonus: never fail the demo on it
            log("GPU timing failed: {}".format(" ".join(str(exc).split())[:200]))
    log("wrote {}, {}".format(sparse_path, report_path))
    log("next: trt-sparse build {} --shapes {}:1x3x{}x{} (TensorRT + the plugin library)".format(
        sparse_path, DEMO_INPUT, DEMO_HW, DEMO_HW))
    summary.update(converted=len(result.converted), conv_layers=len(result.layers),
                   max_rel=result.verification.max_rel if result.verification else None,
                   passed=result.verification.passed if result.verification else None,
                   sparse_model=sparse_path, report=report_path, seconds=time.time() - t0)
    return summary
