"""trt_loader: TensorRT import, the TensorRT-RTX library path, plugin library lookup and loading."""
import os
import sys
import types

import pytest

from trt_sparse import trt_loader
from trt_sparse.errors import TrtSparseError


def _fake_trt(name="tensorrt", version="10.3.0.26", **attrs):
    mod = types.ModuleType(name)
    mod.__version__ = version
    mod.Builder = object
    mod.Logger = object
    for k, v in attrs.items():
        setattr(mod, k, v)
    return mod


def test_import_tensorrt_missing_names_both_and_hints(monkeypatch):
    monkeypatch.setitem(sys.modules, "tensorrt", None)  # None in sys.modules -> ImportError
    monkeypatch.setitem(sys.modules, "tensorrt_rtx_bindings", None)
    monkeypatch.delenv(trt_loader.ENV_BACKEND, raising=False)
    with pytest.raises(TrtSparseError) as info:
        trt_loader.import_tensorrt()
    msg = str(info.value)
    assert "tensorrt" in msg and "tensorrt_rtx_bindings" in msg and "pip install" in msg
    assert "\n" not in msg


def test_import_tensorrt_prefers_tensorrt_then_rtx(monkeypatch):
    rtx = _fake_trt("tensorrt_rtx_bindings", "1.7.1.116")
    monkeypatch.setitem(sys.modules, "tensorrt_rtx_bindings", rtx)
    monkeypatch.setitem(sys.modules, "tensorrt", None)
    monkeypatch.delenv(trt_loader.ENV_BACKEND, raising=False)
    assert trt_loader.import_tensorrt() is rtx
    full = _fake_trt("tensorrt", "10.3.0")
    monkeypatch.setitem(sys.modules, "tensorrt", full)
    assert trt_loader.import_tensorrt() is full
    assert trt_loader.import_tensorrt("rtx") is rtx
    monkeypatch.setenv(trt_loader.ENV_BACKEND, "rtx")
    assert trt_loader.import_tensorrt() is rtx


def test_import_tensorrt_rejects_placeholder_and_unknown_backend(monkeypatch):
    placeholder = types.ModuleType("tensorrt")
    monkeypatch.setitem(sys.modules, "tensorrt", placeholder)
    with pytest.raises(TrtSparseError, match="placeholder"):
        trt_loader.import_tensorrt("tensorrt")
    with pytest.raises(TrtSparseError, match="unknown TensorRT backend"):
        trt_loader.import_tensorrt("onnxruntime")


def test_flavour_version_and_typing():
    assert trt_loader.flavour(_fake_trt("tensorrt_rtx_bindings")) == "tensorrt-rtx"
    assert trt_loader.flavour(_fake_trt("tensorrt")) == "tensorrt"
    assert trt_loader.version_tuple(_fake_trt(version="8.2.1.8")) == (8, 2, 1, 8)
    assert trt_loader.version_tuple(_fake_trt(version="10.16.0b3")) == (10, 16, 0)
    assert not trt_loader.is_strongly_typed_only(_fake_trt(version="10.3.0"))
    assert trt_loader.is_strongly_typed_only(_fake_trt(version="11.1.0"))
    assert trt_loader.is_strongly_typed_only(_fake_trt("tensorrt_rtx_bindings", "1.7.1"))


@pytest.fixture
def fake_rtx_libdir(tmp_path, monkeypatch):
    libdir = tmp_path / "tensorrt_rtx_libs"
    libdir.mkdir()
    (libdir / "libtensorrt_rtx.so.1").write_bytes(b"\x7fELF fake")
    monkeypatch.setattr(trt_loader, "rtx_library_dir", lambda: str(libdir))
    return libdir


def test_ensure_rtx_library_path_creates_symlink_idempotently(fake_rtx_libdir, tmp_path):
    link_dir = tmp_path / "links"
    got = trt_loader.ensure_rtx_library_path(str(link_dir))
    assert got == str(link_dir)
    link = link_dir / "libtensorrt_rtx.so"
    assert link.is_symlink() and os.path.realpath(str(link)) == os.path.realpath(
        str(fake_rtx_libdir / "libtensorrt_rtx.so.1"))
    # a stale link (pointing elsewhere) is replaced, a correct one kept
    os.remove(str(link))
    os.symlink(str(tmp_path / "elsewhere.so"), str(link))
    assert trt_loader.ensure_rtx_library_path(str(link_dir)) == str(link_dir)
    assert os.path.realpath(str(link)) == os.path.realpath(str(fake_rtx_libdir / "libtensorrt_rtx.so.1"))
    assert sorted(os.listdir(str(link_dir))) == ["libtensorrt_rtx.so"]


def test_ensure_rtx_library_path_none_without_wheel(monkeypatch):
    monkeypatch.setattr(trt_loader, "rtx_library_dir", lambda: None)
    assert trt_loader.ensure_rtx_library_path() is None


def test_rtx_env_prepends_and_detects(fake_rtx_libdir, tmp_path, monkeypatch):
    monkeypatch.setenv(trt_loader.ENV_RTX_LIB_DIR, str(tmp_path / "l"))
    env = trt_loader.rtx_env({"LD_LIBRARY_PATH": "/opt/x", "A": "1"})
    first, rest = env["LD_LIBRARY_PATH"].split(os.pathsep, 1)
    assert first == str(tmp_path / "l") and rest == "/opt/x" and env["A"] == "1"
    assert trt_loader.library_path_has_rtx(env)
    assert not trt_loader.library_path_has_rtx({"LD_LIBRARY_PATH": "/opt/x"})
    assert trt_loader.rtx_env(env) == env  # already set: unchanged


def test_rtx_needs_reexec(fake_rtx_libdir, monkeypatch):
    rtx = _fake_trt("tensorrt_rtx_bindings", "1.7.1")
    monkeypatch.setenv("LD_LIBRARY_PATH", "/nowhere")
    monkeypatch.delenv(trt_loader.ENV_REEXEC, raising=False)
    if not sys.platform.startswith("linux"):
        pytest.skip("the LD_LIBRARY_PATH handling is Linux-only")
    assert trt_loader.rtx_needs_reexec(rtx)
    assert not trt_loader.rtx_needs_reexec(_fake_trt("tensorrt"))
    monkeypatch.setenv(trt_loader.ENV_REEXEC, "1")  # the child never re-executes again
    assert not trt_loader.rtx_needs_reexec(rtx)


def test_find_plugin_library_order(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(trt_loader.ENV_PLUGIN, raising=False)
    monkeypatch.setattr(trt_loader, "_REPO_ROOT", str(tmp_path / "norepo"))
    assert trt_loader.find_plugin_library() is None
    (tmp_path / "build").mkdir()
    built = tmp_path / "build" / "libtrt_sparse_plugin.so"
    built.write_bytes(b"x")
    assert trt_loader.find_plugin_library() == str(built)
    env_lib = tmp_path / "env.so"
    env_lib.write_bytes(b"y")
    monkeypatch.setenv(trt_loader.ENV_PLUGIN, str(env_lib))
    assert trt_loader.find_plugin_library() == str(env_lib)
    explicit = tmp_path / "explicit.so"
    explicit.write_bytes(b"z")
    assert trt_loader.find_plugin_library(str(explicit)) == str(explicit)


@pytest.mark.parametrize("source", ["explicit", "env"])
def test_find_plugin_library_missing_path_is_an_error(tmp_path, monkeypatch, source):
    missing = str(tmp_path / "nope.so")
    if source == "env":
        monkeypatch.setenv(trt_loader.ENV_PLUGIN, missing)
        with pytest.raises(TrtSparseError, match=trt_loader.ENV_PLUGIN):
            trt_loader.find_plugin_library()
    else:
        with pytest.raises(TrtSparseError, match="--plugin"):
            trt_loader.find_plugin_library(missing)


def test_file_sha256(tmp_path):
    import hashlib

    p = tmp_path / "f.bin"
    data = os.urandom(3 * (1 << 20) + 17)
    p.write_bytes(data)
    assert trt_loader.file_sha256(str(p)) == hashlib.sha256(data).hexdigest()


class _Creator:
    def __init__(self, name, version):
        self.name, self.plugin_version = name, version


class _Registry:
    def __init__(self, result):
        self.result, self.calls, self.all_creators = result, [], []

    def load_library(self, path):
        self.calls.append(path)
        if self.result is not None:
            self.all_creators.append(_Creator("SparseConv2d", "1"))
        return self.result


def test_load_plugin_library_registry_path_skips_loaded(tmp_path):
    lib = tmp_path / "libp.so"
    lib.write_bytes(b"x")
    reg = _Registry(result="handle")
    trt = _fake_trt("tensorrt", "10.3.0", get_plugin_registry=lambda: reg)
    assert trt_loader.load_plugin_library(trt, str(lib)) == "handle"
    assert trt_loader.load_plugin_library(trt, str(lib)) is True  # creator present: not loaded again
    assert reg.calls == [str(lib)]
    other = _Registry(result="h2")  # TensorRT-RTX: each builder/runtime has its own registry
    assert trt_loader.load_plugin_library(trt, str(lib), registry=other) == "h2"
    assert other.calls == [str(lib)]


def test_registry_has_plugin_trt8_list():
    reg = type("R", (), {"plugin_creator_list": [_Creator("Other", "1"), _Creator("SparseConv2d", "2")]})()
    assert not trt_loader.registry_has_plugin(reg)
    reg.plugin_creator_list.append(_Creator("SparseConv2d", "1"))
    assert trt_loader.registry_has_plugin(reg)


def test_load_plugin_library_failure_is_actionable(tmp_path, monkeypatch):
    monkeypatch.setattr(trt_loader, "_LOADED", {})
    lib = tmp_path / "libp.so"
    lib.write_bytes(b"x")
    trt = _fake_trt("tensorrt_rtx_bindings", "1.7.1")
    with pytest.raises(TrtSparseError, match="getCreators"):
        trt_loader.load_plugin_library(trt, str(lib), registry=_Registry(result=None))
    with pytest.raises(TrtSparseError, match="does not exist"):
        trt_loader.load_plugin_library(trt, str(tmp_path / "missing.so"), registry=_Registry("h"))


def test_load_plugin_library_trt8_uses_ctypes(tmp_path, monkeypatch):
    monkeypatch.setattr(trt_loader, "_LOADED", {})
    bad = tmp_path / "notalib.so"
    bad.write_bytes(b"not an ELF file")
    calls = []
    trt = _fake_trt("tensorrt", "8.2.1.8", init_libnvinfer_plugins=lambda lg, ns: calls.append(ns))
    with pytest.raises(TrtSparseError, match="cannot load plugin library"):
        trt_loader.load_plugin_library(trt, str(bad), logger=object())
    assert calls == []  # init only after a successful dlopen
