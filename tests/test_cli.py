"""The ``trt-sparse`` command registry: help, version, sub-command modules and argument errors."""
import importlib
import subprocess
import sys

import pytest

from trt_sparse import __version__, cli


def test_version(capsys):
    with pytest.raises(SystemExit) as info:
        cli.main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out.strip() == "trt-sparse " + __version__


def test_no_command_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as info:
        cli.main([])
    assert info.value.code == 2
    assert "usage: trt-sparse" in capsys.readouterr().err


def test_unknown_command(capsys):
    with pytest.raises(SystemExit) as info:
        cli.main(["frobnicate"])
    assert info.value.code == 2
    assert "invalid choice" in capsys.readouterr().err


def test_inspect_needs_a_model(capsys):
    with pytest.raises(SystemExit) as info:
        cli.main(["inspect"])
    assert info.value.code == 2
    assert "model" in capsys.readouterr().err


def test_every_present_command_module_follows_the_contract():
    loaded = cli._load_commands()
    assert "inspect" in loaded
    for name, module in loaded.items():
        assert isinstance(module.HELP, str) and module.HELP and "\n" not in module.HELP, name
        assert callable(module.add_arguments) and callable(module.run), name
    # modules that exist on disk are all registered (a typo in COMMANDS would hide one)
    for name, modname in cli.COMMANDS.items():
        try:
            importlib.import_module("trt_sparse.commands." + modname)
        except ModuleNotFoundError:
            assert name not in loaded
        else:
            assert name in loaded


def test_help_lists_commands(capsys):
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    out = capsys.readouterr().out
    for name in cli._load_commands():
        assert name in out


def test_python_dash_m(tmp_path):
    missing = str(tmp_path / "missing.onnx")
    proc = subprocess.run([sys.executable, "-m", "trt_sparse", "inspect", missing],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip() == "trt-sparse inspect: error: no such file: " + missing
