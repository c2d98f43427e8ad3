"""TensorRT-RTX probe for the SparseConv2d plugin (run in a subprocess, see tests/test_plugin.py).

    python tests/cpp/rtx_probe.py PLUGIN.so MODEL.onnx [--json OUT.json] [--max-batch 4]

Must start with ``libtensorrt_rtx.so`` on LD_LIBRARY_PATH (trt_sparse.trt_loader.rtx_env):
RTX's ONNX parser dlopens it while adding a plugin layer and aborts the process otherwise.
Loads the plugin library into the builder's registry, checks the creator's declared
fields, parses MODEL with RTX's ONNX parser, checks that every SparseConv2d node became a
PLUGIN_V3 layer of ours, and builds a serialized engine (CPU only: RTX needs no GPU to
build). Prints one JSON object; also lists, per node, the line the plugin logs when it is
created from the parser's fields (TRT_SPARSE_PLUGIN_LOG=info) so the caller can compare
what the plugin received with what the node carries.
"""
import argparse
import json
import os
import sys
import time

import numpy as np
import onnx
from onnx import numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from trt_sparse import trt_loader  # noqa: E402

EXPECTED_FIELDS = [
    "plugin_version", "plugin_namespace", "format_version", "weight_shape", "strides", "pads",
    "dilations", "activation", "clip_min", "clip_max", "weight_format", "row_offsets", "indices",
    "values", "packed", "bias",
]


def _attrs(node):
    out = {}
    for a in node.attribute:
        if a.type == onnx.AttributeProto.TENSOR:
            out[a.name] = numpy_helper.to_array(a.t)
        else:
            out[a.name] = onnx.helper.get_attribute_value(a)
    return out


def expected_log_line(node):
    """The 'created layer' line the plugin logs for this node (SparseConv2dCore describeSpec)."""
    a = _attrs(node)
    k, c, r, s = (int(v) for v in a["weight_shape"])
    st = [int(v) for v in a.get("strides", [1, 1])]
    p = [int(v) for v in a.get("pads", [0, 0, 0, 0])]
    d = [int(v) for v in a.get("dilations", [1, 1])]
    nnz = int(np.asarray(a["row_offsets"])[-1])
    fmt = " packed32" if int(a.get("weight_format", 0)) == 1 else " exact"
    return "created layer '{}': K={} C={} {}x{} stride={}x{} pads={},{},{},{} dil={}x{} act={} nnz={}{}{}{}".format(
        node.name, k, c, r, s, st[0], st[1], p[0], p[1], p[2], p[3], d[0], d[1], int(a.get("activation", 0)),
        nnz, fmt, " bias" if "bias" in a else "", " tf32" if int(a.get("allow_tf32", 0)) == 1 else "")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("plugin")
    ap.add_argument("model")
    ap.add_argument("--json")
    ap.add_argument("--max-batch", type=int, default=4)
    args = ap.parse_args(argv)
    result = {"ok": False, "plugin": os.path.abspath(args.plugin), "model": os.path.abspath(args.model)}
    trt = trt_loader.import_tensorrt("rtx")
    result["tensorrt_rtx"] = trt.__version__
    logger = trt.Logger(trt.Logger.WARNING)
    builder = trt.Builder(logger)
    registry = builder.get_plugin_registry()
    handle = registry.load_library(args.plugin)
    result["load_library"] = handle is not None
    creator = registry.get_creator("SparseConv2d", "1", "")
    result["creator"] = type(creator).__name__ if creator is not None else None
    result["declared_fields"] = [f.name for f in creator.field_names] if creator is not None else []

    model = onnx.load(args.model)
    nodes = [n for n in model.graph.node if n.op_type == "SparseConv2d"]
    result["sparse_nodes"] = len(nodes)
    result["expected_log_lines"] = [expected_log_line(n) for n in nodes]

    network = builder.create_network(0)
    parser = trt.OnnxParser(network, logger)
    t0 = time.time()
    parsed = parser.parse_from_file(args.model)
    result["parse_ok"] = bool(parsed)
    result["parse_errors"] = [parser.get_error(i).desc() for i in range(parser.num_errors)]
    result["parse_s"] = round(time.time() - t0, 3)
    plugin_layers = []
    for i in range(network.num_layers):
        layer = network.get_layer(i)
        if layer.type == trt.LayerType.PLUGIN_V3:
            layer.__class__ = trt.IPluginV3Layer
            core = layer.plugin.get_capability_interface(trt.PluginCapabilityType.CORE)
            plugin_layers.append({"name": layer.name, "plugin_name": core.plugin_name,
                                  "plugin_version": core.plugin_version,
                                  "plugin_namespace": core.plugin_namespace})
    result["plugin_layers"] = plugin_layers
    if parsed:
        config = builder.create_builder_config()
        profile = builder.create_optimization_profile()
        dynamic = False
        for i in range(network.num_inputs):
            t = network.get_input(i)
            shape = list(t.shape)
            if any(d < 0 for d in shape):
                dynamic = True
            lo = [1 if d < 0 else d for d in shape]
            hi = [args.max_batch if (d < 0 and j == 0) else (lo[j] if d < 0 else d) for j, d in enumerate(shape)]
            profile.set_shape(t.name, lo, lo, hi)
        if dynamic:
            config.add_optimization_profile(profile)
        t0 = time.time()
        engine = builder.build_serialized_network(network, config)
        result["build_s"] = round(time.time() - t0, 3)
        result["engine_built"] = engine is not None
        if engine is not None:
            blob = bytes(engine)
            result["engine_bytes"] = len(blob)
            result["engine_mentions_SparseConv2d"] = blob.count(b"SparseConv2d")
    result["ok"] = bool(
        result["load_library"] and parsed and result.get("engine_built")
        and len(plugin_layers) == len(nodes)
        and all(p["plugin_name"] == "SparseConv2d" for p in plugin_layers)
    )
    text = json.dumps(result, indent=1)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text)
    print("RTX-PROBE " + json.dumps(result))
    sys.stdout.flush()
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
