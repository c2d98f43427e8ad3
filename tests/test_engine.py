"""engine.py pure logic: shape specs and profiles, sizes, parser error formatting, build CLI arguments."""
import argparse
import types

import pytest

from trt_sparse import engine
from trt_sparse.commands import bench_cmd, build_cmd
from trt_sparse.errors import TrtSparseError


def test_parse_dims():
    assert engine.parse_dims("1x3x224x224") == (1, 3, 224, 224)
    assert engine.parse_dims(" 7 ") == (7,)
    for bad in ("", "1x", "x3", "1x-3", "1,3", "0x3", "ax3"):
        with pytest.raises(TrtSparseError):
            engine.parse_dims(bad)


def test_parse_shape_spec_names_with_colons_and_errors():
    spec = engine.parse_shape_spec("input:0:1x3x8x8, mask:2x5")
    assert list(spec.items()) == [("input:0", (1, 3, 8, 8)), ("mask", (2, 5))]
    assert engine.parse_shape_spec(None) == {}
    with pytest.raises(TrtSparseError, match="NAME:DIMS"):
        engine.parse_shape_spec("1x3x8x8")
    with pytest.raises(TrtSparseError, match="twice"):
        engine.parse_shape_spec("a:1,a:2")
    with pytest.raises(TrtSparseError, match="input a"):
        engine.parse_shape_spec("a:1xq")


def test_make_profiles_fixed_and_ranges():
    p = engine.make_profiles(shapes="x:1x3x8x8")
    assert p == {"x": ((1, 3, 8, 8),) * 3}
    p = engine.make_profiles(min_shapes="x:1x3x8x8", opt_shapes="x:4x3x8x8", max_shapes="x:8x3x8x8")
    assert p == {"x": ((1, 3, 8, 8), (4, 3, 8, 8), (8, 3, 8, 8))}
    p = engine.make_profiles(opt_shapes={"y": (2, 2)})  # opt alone: fixed
    assert p == {"y": ((2, 2),) * 3}
    p = engine.make_profiles(shapes={"z": ((1, 2), (2, 2), (3, 2))})  # triples pass through
    assert p["z"] == ((1, 2), (2, 2), (3, 2))


@pytest.mark.parametrize("kwargs,match", [
    (dict(min_shapes="x:1x3", max_shapes="x:2x3"), "opt"),
    (dict(min_shapes="x:1x3", opt_shapes="x:2x3"), "max"),
    (dict(min_shapes="x:4x3", opt_shapes="x:2x3", max_shapes="x:8x3"), "min <= opt <= max"),
    (dict(min_shapes="x:1x3", opt_shapes="x:2x3x1", max_shapes="x:8x3"), "ranks"),
    (dict(shapes="x:1x3", opt_shapes="x:2x3"), "both"),
])
def test_make_profiles_errors(kwargs, match):
    with pytest.raises(TrtSparseError, match=match):
        engine.make_profiles(**kwargs)


def test_resolve_profiles():
    inputs = [("x", (-1, 3, 8, 8)), ("y", (2, 5))]
    prof = {"x": ((1, 3, 8, 8), (2, 3, 8, 8), (4, 3, 8, 8))}
    assert engine.resolve_profiles(inputs, prof) == prof  # static y needs no profile
    warnings = []
    got = engine.resolve_profiles(inputs, {}, warn=warnings.append)
    assert got == {"x": ((1, 3, 8, 8),) * 3}
    assert len(warnings) == 1 and "x" in warnings[0] and "-1x3x8x8" in warnings[0]
    with pytest.raises(TrtSparseError, match="no network input named z.*inputs: x, y"):
        engine.resolve_profiles(inputs, {"z": ((1,),) * 3})
    with pytest.raises(TrtSparseError, match="dimension 1 is fixed to 3"):
        engine.resolve_profiles(inputs, {"x": ((1, 4, 8, 8),) * 3})
    with pytest.raises(TrtSparseError, match="rank 4"):
        engine.resolve_profiles(inputs, {"x": ((1, 3, 8),) * 3})
    # a matching profile for a static input is accepted and not needed in the result
    assert engine.resolve_profiles(inputs, {"y": ((2, 5),) * 3, **prof}) == prof


def test_parse_size():
    assert engine.parse_size("4096") == 4096
    assert engine.parse_size("1G") == 1 << 30
    assert engine.parse_size("512M") == 512 << 20
    assert engine.parse_size("1.5k") == 1536
    assert engine.parse_size("2GiB") == 2 << 30
    for bad in ("", "G", "-1M", "1T", "0"):
        with pytest.raises(TrtSparseError):
            engine.parse_size(bad)


class _Err10:
    def __init__(self, desc, name, op, node=-1):
        self._d, self._n, self._o, self._i = desc, name, op, node

    def desc(self):
        return self._d

    def node(self):
        return self._i

    def node_name(self):
        return self._n

    def node_operator(self):
        return self._o


class _Err8:
    def __init__(self, desc, node):
        self._d, self._i = desc, node

    def desc(self):
        return self._d

    def node(self):
        return self._i


class _Parser:
    def __init__(self, errors):
        self.errors = errors

    @property
    def num_errors(self):
        return len(self.errors)

    def get_error(self, i):
        return self.errors[i]


def test_parser_error_lines_trt10_names():
    lines = engine.parser_error_lines(_Parser([_Err10("Plugin not found", "sconv_3", "SparseConv2d", 3)]))
    assert lines == ["node sconv_3 (SparseConv2d): Plugin not found"]


def test_parser_error_lines_trt8_maps_index_to_onnx_node():
    nodes = [types.SimpleNamespace(name="a", op_type="Conv"), types.SimpleNamespace(name="", op_type="Foo")]
    lines = engine.parser_error_lines(_Parser([_Err8("unsupported", 1), _Err8("bad graph", -1),
                                               _Err8("oops", 0)]), nodes)
    assert lines == ["node #1 (Foo): unsupported", "bad graph", "node a (Conv): oops"]


def test_build_cli_arguments_map_to_build_engine_kwargs():
    parser = argparse.ArgumentParser()
    build_cmd.add_arguments(parser)
    args = parser.parse_args(["m.onnx", "--fp16", "--workspace", "2G", "--no-tf32", "--plugin", "p.so",
                              "--compute-capability", "SM86", "--compute-capability", "SM89", "--trt", "rtx",
                              "--min-shapes", "x:1x3x8x8", "--opt-shapes", "x:2x3x8x8", "--max-shapes",
                              "x:4x3x8x8"])
    kw = build_cmd.build_kwargs(args)
    assert kw["precision"] == "fp16" and kw["workspace"] == 2 << 30 and kw["tf32"] is False
    assert kw["plugin_lib"] == "p.so" and kw["compute_capabilities"] == ["SM86", "SM89"]
    assert kw["backend"] == "rtx" and kw["strongly_typed"] is None
    assert build_cmd.profiles_from_args(args) == {"x": ((1, 3, 8, 8), (2, 3, 8, 8), (4, 3, 8, 8))}


def test_build_cli_errors_are_one_line(tmp_path, capsys):
    from trt_sparse import cli

    assert cli.main(["build", str(tmp_path / "missing.onnx")]) == 2
    err = capsys.readouterr().err
    assert "does not exist" in err and err.count("\n") == 1


def test_build_engine_refuses_to_overwrite_model(tmp_path):
    p = tmp_path / "m.onnx"
    p.write_bytes(b"")
    with pytest.raises(TrtSparseError, match="overwrite"):
        engine.build_engine(str(p), save_path=str(p))
    with pytest.raises(TrtSparseError, match="precision"):
        engine.build_engine(str(p), precision="int8")


def test_sidecar_path_and_atomic_json(tmp_path):
    target = str(tmp_path / "sub" / "m.engine")
    engine.write_json_atomic(engine.sidecar_path(target), {"a": 1})
    assert engine.read_sidecar(target) == {"a": 1}
    assert engine.read_sidecar(str(tmp_path / "none.engine")) is None


# ---- bench argument helpers

def test_parse_batches():
    assert bench_cmd.parse_batches("8,1,8, 32") == [1, 8, 32]
    assert bench_cmd.parse_batches(None) is None
    for bad in ("a", "0,1", ","):
        with pytest.raises(TrtSparseError):
            bench_cmd.parse_batches(bad)


def test_batch_profiles():
    inputs = [("x", (-1, 3, 8, 8))]
    assert bench_cmd.batch_profiles(inputs, [1, 4, 16], {}) == {"x": ((1, 3, 8, 8), (16, 3, 8, 8), (16, 3, 8, 8))}
    assert bench_cmd.batch_profiles(inputs, None, {}) == {}
    with pytest.raises(TrtSparseError, match="fixed batch"):
        bench_cmd.batch_profiles([("x", (1, 3, 8, 8))], [1, 2], {})
    with pytest.raises(TrtSparseError, match="dynamic dimensions besides"):
        bench_cmd.batch_profiles([("x", (-1, 3, -1, -1))], [1, 2], {})
    explicit = {"x": ((1, 3, 16, 16),) * 3}
    got = bench_cmd.batch_profiles([("x", (-1, 3, -1, -1))], [2, 4], explicit)
    assert got == {"x": ((2, 3, 16, 16), (4, 3, 16, 16), (4, 3, 16, 16))}


def test_bench_cli_rejects_bad_report_extension(tmp_path, capsys):
    from trt_sparse import cli

    rc = cli.main(["bench", "a.onnx", "b.onnx", "--report", str(tmp_path / "r.txt")])
    assert rc == 2 and ".json or .md" in capsys.readouterr().err
