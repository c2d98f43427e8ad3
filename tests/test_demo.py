"""``trt-sparse demo`` on a fresh CPU-only machine: builds, prunes, converts, verifies, reports."""
import json
import os

import onnx
import pytest

from trt_sparse.cli import main
from trt_sparse.demo import build_demo_model

pytest.importorskip("onnxruntime", reason="onnxruntime not installed (pip install -e '.[test]')")


def test_demo_model_is_valid():
    m = build_demo_model()
    onnx.checker.check_model(m, full_check=True)
    ops = [n.op_type for n in m.graph.node]
    assert ops.count("Conv") == 6 and "BatchNormalization" in ops and "Clip" in ops


def test_demo_end_to_end(tmp_path, capsys):
    assert main(["demo", "--out-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "verification passed" in out and "converted 5 of 6 Conv layers" in out
    assert "group = 64" in out  # the depthwise conv stays dense with its reason
    for name in ("demo.onnx", "demo.pruned.onnx", "demo.sparse.onnx", "demo.report.json"):
        assert os.path.getsize(str(tmp_path / name)) > 0
    rep = json.loads((tmp_path / "demo.report.json").read_text())
    assert rep["verification"]["passed"] and rep["verification"]["max_rel"] < 1e-5
    fused = {layer["name"]: layer["fused"] for layer in rep["layers"]}
    assert fused["stem.conv"] == ["BatchNormalization", "Relu"] and fused["dil.conv"] == ["Clip(0, 6)"]
    sparse = onnx.load(str(tmp_path / "demo.sparse.onnx"))
    assert sum(n.op_type == "SparseConv2d" for n in sparse.graph.node) == 5
    assert main(["verify", str(tmp_path / "demo.pruned.onnx"), str(tmp_path / "demo.sparse.onnx")]) == 0


def test_demo_temp_dir_is_removed(capsys):
    assert main(["demo", "--weights", "packed32"]) == 0
    out = capsys.readouterr().out
    assert "packed32 weight rounding" in out and "temporary files removed" in out


def test_demo_without_onnxruntime_skips_verification(tmp_path, capsys, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    assert main(["demo", "--out-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "verification skipped: onnxruntime is not installed" in out and "converted 5 of 6" in out
    assert (tmp_path / "demo.sparse.onnx").exists()
