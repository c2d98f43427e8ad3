"""The build path through TensorRT-RTX on the CPU: dense models, fp16, profiles, parser errors, the plugin.

TensorRT-RTX (pip extra ``rtx``) builds engines without a GPU; these tests skip
when it is not installed. The plugin test also needs the plugin library
(``cmake -S plugin -B build && cmake --build build``, or $TRT_SPARSE_PLUGIN_LIB).
"""
import importlib.util
import json
import os

import pytest

from trt_sparse import cli, engine, trt_loader
from trt_sparse.errors import TrtSparseError

pytestmark = pytest.mark.rtx

try:
    import tensorrt_rtx_bindings  # noqa: F401

    _RTX = None
except Exception as exc:  # ImportError, or the wheel's libraries failing to load
    _RTX = "TensorRT-RTX is not installed (pip install -e '.[rtx]'): {}".format(exc)

_spec = importlib.util.spec_from_file_location(
    "_trt_sparse_engine_models", os.path.join(os.path.dirname(os.path.abspath(__file__)), "test_engine_models.py"))
M = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(M)

needs_rtx = pytest.mark.skipif(_RTX is not None, reason=_RTX or "")


def _build(path, **kw):
    kw.setdefault("backend", "rtx")
    kw.setdefault("progress", False)
    return engine.build_engine(str(path), **kw)


@needs_rtx
def test_dense_build_writes_engine_and_sidecar(tmp_path):
    onnx_path = tmp_path / "tiny.onnx"
    M.tiny_convnet(str(onnx_path))
    target = tmp_path / "out" / "tiny.engine"
    res = _build(onnx_path, shapes={"x": ((1, 3, 16, 16), (2, 3, 16, 16), (4, 3, 16, 16))}, save_path=str(target))
    data = target.read_bytes()
    assert len(data) > 1000 and data == res.engine
    side = json.loads((tmp_path / "out" / "tiny.engine.json").read_text())
    assert side["tensorrt"]["flavour"] == "tensorrt-rtx"
    assert side["tensorrt"]["version"] == tensorrt_rtx_bindings.__version__
    assert side["precision"] == "fp32" and side["strongly_typed"] is True and side["plugin"] is None
    assert side["shapes"] == {"x": [[1, 3, 16, 16], [2, 3, 16, 16], [4, 3, 16, 16]]}
    assert side["inputs"] == [{"name": "x", "shape": [-1, 3, 16, 16], "dtype": "float"}]
    assert side["outputs"][0]["name"] == "y"
    assert side["onnx"]["sha256"] == trt_loader.file_sha256(str(onnx_path))
    assert side["engine_bytes"] == len(data)


@needs_rtx
def test_fp16_build_keeps_fp32_io_and_halves_weights(tmp_path):
    onnx_path = tmp_path / "r18w16.onnx"
    M.resnet18(str(onnx_path), width=16, hw=64, num_classes=10)
    shapes = {"input": (1, 3, 64, 64)}
    fp32 = _build(onnx_path, shapes=shapes)
    fp16 = _build(onnx_path, shapes=shapes, precision="fp16")
    assert fp16.metadata["fp16_conversion"]["initializers"] > 0
    assert [i["dtype"] for i in fp16.metadata["inputs"]] == ["float"]
    assert [o["dtype"] for o in fp16.metadata["outputs"]] == ["float"]
    assert len(fp16.engine) < 0.75 * len(fp32.engine)  # weights stored in fp16


@needs_rtx
def test_resnet18_dense_build(tmp_path):
    onnx_path = tmp_path / "resnet18.onnx"
    M.resnet18(str(onnx_path))
    res = _build(onnx_path, shapes={"input": (1, 3, 224, 224)}, save_path=str(tmp_path / "r18.engine"))
    assert len(res.engine) > 40e6  # 11.7 M fp32 parameters
    assert res.metadata["outputs"][0]["shape"][-1] == 1000


@needs_rtx
def test_parser_errors_name_the_node(tmp_path):
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    w = numpy_helper.from_array(np.zeros((2, 3, 3, 3), np.float32), "W")  # 3 channels, input has 4
    g = helper.make_graph([helper.make_node("Conv", ["x", "W"], ["y"], name="bad_conv")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [w])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    path = tmp_path / "bad.onnx"
    onnx.save(m, str(path))
    with pytest.raises(TrtSparseError, match=r"node bad_conv \(Conv\)"):
        _build(path)


@needs_rtx
def test_wrong_profile_names_input(tmp_path):
    onnx_path = tmp_path / "tiny.onnx"
    M.tiny_convnet(str(onnx_path))
    with pytest.raises(TrtSparseError, match="no network input named image"):
        _build(onnx_path, shapes={"image": ((1, 3, 16, 16),) * 3})


@needs_rtx
def test_cli_build(tmp_path, capsys):
    onnx_path = tmp_path / "tiny.onnx"
    M.tiny_convnet(str(onnx_path))
    out = tmp_path / "tiny.engine"
    rc = cli.main(["build", str(onnx_path), "-o", str(out), "--shapes", "x:2x3x16x16", "--fp16", "--trt", "rtx",
                   "--no-progress", "--workspace", "256M"])
    assert rc == 0
    assert "wrote {}".format(out) in capsys.readouterr().out
    side = engine.read_sidecar(str(out))
    assert side["precision"] == "fp16" and side["workspace"] == 256 << 20
    assert side["shapes"] == {"x": [[2, 3, 16, 16]] * 3}


def _plugin_lib():
    try:
        return trt_loader.find_plugin_library()
    except TrtSparseError:
        return None


@needs_rtx
@pytest.mark.skipif(_plugin_lib() is None, reason="plugin library not built (cmake -S plugin -B build && "
                                                  "cmake --build build -j2, or set TRT_SPARSE_PLUGIN_LIB)")
@pytest.mark.parametrize("precision", ["fp32", "fp16"])
def test_converted_model_builds_with_plugin(tmp_path, precision, capsys):
    dense = tmp_path / "dense.onnx"
    M.resnet18(str(dense), width=16, hw=32, num_classes=10)
    pruned = tmp_path / "pruned.onnx"
    sparse = tmp_path / "sparse.onnx"
    assert cli.main(["prune", str(dense), "-o", str(pruned), "--sparsity", "0.9", "-q"]) == 0
    assert cli.main(["convert", str(pruned), "-o", str(sparse), "--no-verify", "-q"]) == 0
    capsys.readouterr()
    res = _build(sparse, precision=precision, shapes={"input": (1, 3, 32, 32)},
                 save_path=str(tmp_path / "sparse.engine"))
    meta = res.metadata
    assert meta["onnx"]["sparse_conv_nodes"] > 0
    assert meta["plugin"]["sha256"] == trt_loader.file_sha256(_plugin_lib())
    assert len(res.engine) > 0 and (tmp_path / "sparse.engine").read_bytes() == res.engine


@needs_rtx
def test_bench_builds_both_engines_with_batch_profile(tmp_path):
    import argparse

    from trt_sparse.commands import bench_cmd

    dense = tmp_path / "a.onnx"
    M.tiny_convnet(str(dense))
    parser = argparse.ArgumentParser()
    bench_cmd.add_arguments(parser)
    args = parser.parse_args([str(dense), str(dense), "--batch", "1,4", "--engine-dir", str(tmp_path / "eng"),
                              "--trt", "rtx", "--no-progress"])
    info = {}
    engines, tmpdir = bench_cmd._prepare_engines(args, info)
    assert tmpdir is None and list(engines) == ["dense", "sparse"]
    assert info["flavour"] == "tensorrt-rtx"
    for path in engines.values():
        side = engine.read_sidecar(path)
        assert side["shapes"] == {"x": [[1, 3, 16, 16], [4, 3, 16, 16], [4, 3, 16, 16]]}
