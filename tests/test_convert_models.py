"""Real exporter output: torch.onnx exports of tools/models (ResNet-18 with BN kept, MobileNetV2), pruned, converted.

Needs torch (``pip install torch==2.13.0``, CPU build); skipped without it. Small
images (64x64) keep it fast; tools/acceptance_convert.sh runs the full-size set.
"""
import os
import sys

import numpy as np
import pytest

from trt_sparse.cli import main

torch = pytest.importorskip("torch", reason="torch not installed (pip install torch==2.13.0 for exporter tests)")
pytest.importorskip("onnxruntime", reason="onnxruntime not installed (pip install -e '.[test]')")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import export_models  # noqa: E402


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    d = tmp_path_factory.mktemp("models")
    paths = {}
    for name in ("resnet18_bn", "mobilenetv2"):
        paths[name] = export_models.export(name, str(d), image_size=64)
    return d, paths


def _convert(capsys, d, name, src):
    pruned = str(d / (name + ".p90.onnx"))
    assert main(["prune", src, "-o", pruned, "--sparsity", "0.9", "-q"]) == 0
    out = str(d / (name + ".sparse.onnx"))
    rep = str(d / (name + ".json"))
    assert main(["convert", pruned, "-o", out, "--report", rep, "-q"]) == 0
    capsys.readouterr()
    import json

    with open(rep) as f:
        return json.load(f)


@pytest.mark.slow
def test_resnet18_with_batchnorm_nodes(exported, capsys):
    d, paths = exported
    import onnx

    m = onnx.load(paths["resnet18_bn"])
    assert sum(n.op_type == "BatchNormalization" for n in m.graph.node) == 20  # BN really kept by the export
    rep = _convert(capsys, d, "resnet18_bn", paths["resnet18_bn"])
    assert rep["totals"]["conv_layers"] == 20 and rep["totals"]["converted"] == 20
    assert all(layer["fused"][0] == "BatchNormalization" for layer in rep["layers"])
    assert sum("Relu" in layer["fused"] for layer in rep["layers"]) == 9  # stem + conv1 of every block
    assert rep["verification"]["passed"] and rep["verification"]["max_rel"] < 1e-5
    out = onnx.load(str(d / "resnet18_bn.sparse.onnx"))
    ops = [n.op_type for n in out.graph.node]
    assert "BatchNormalization" not in ops and ops.count("SparseConv2d") == 20
    assert out.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "N"  # dynamic batch kept


@pytest.mark.slow
def test_mobilenetv2_depthwise_dense_relu6_fused(exported, capsys):
    d, paths = exported
    rep = _convert(capsys, d, "mobilenetv2", paths["mobilenetv2"])
    layers = rep["layers"]
    dense = [layer for layer in layers if layer["decision"] == "dense"]
    assert len(layers) == 52 and len(dense) == 17
    assert all(layer["reason"].startswith("group = ") for layer in dense)
    assert sum(any(f.startswith("Clip(0, 6)") for f in layer["fused"]) for layer in layers) == 18
    assert rep["verification"]["passed"] and rep["verification"]["max_rel"] < 1e-5
    # batch 3 through the dynamic batch axis
    assert main(["verify", str(d / "mobilenetv2.p90.onnx"), str(d / "mobilenetv2.sparse.onnx"), "--batch", "3"]) == 0
    assert np.isfinite(rep["totals"]["weight_bytes_after"])


# torchvision's published parameter counts (torchvision.models docs, "num_params")
TORCHVISION_PARAMS = {"resnet18": 11689512, "resnet50": 25557032, "vgg16": 138357544, "mobilenetv2": 3504872}
TORCHVISION_CONVS = {"resnet18": 20, "resnet50": 53, "vgg16": 13, "mobilenetv2": 52}


@pytest.mark.parametrize("name", sorted(TORCHVISION_PARAMS))
def test_definitions_match_torchvision_sizes(name):
    model = export_models.build(name)
    assert sum(p.numel() for p in model.parameters()) == TORCHVISION_PARAMS[name]
    assert sum(isinstance(m, torch.nn.Conv2d) for m in model.modules()) == TORCHVISION_CONVS[name]
    with torch.no_grad():
        assert tuple(model(torch.zeros(1, 3, 64, 64)).shape) == (1, 1000)
