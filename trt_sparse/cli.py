"""The ``trt-sparse`` command line: one sub-command per module in trt_sparse.commands.

Each module in ``trt_sparse/commands/`` defines ``HELP`` (one line),
``add_arguments(parser)`` and ``run(args) -> int``. User errors
(:class:`trt_sparse.errors.TrtSparseError`, missing files) become a one-line
message on stderr and exit code 2, never a traceback.
"""
import argparse
import importlib
import os
import sys

from . import __version__
from .errors import TrtSparseError

#: sub-command name -> module under trt_sparse.commands (module names avoid builtins)
COMMANDS = {
    "inspect": "inspect_cmd",
    "prune": "prune_cmd",
    "convert": "convert_cmd",
    "verify": "verify_cmd",
    "demo": "demo_cmd",
    "bench-kernels": "bench_kernels_cmd",
    "build": "build_cmd",
    "bench": "bench_cmd",
}


def _load_commands():
    loaded = {}
    for name, module in COMMANDS.items():
        try:
            loaded[name] = importlib.import_module("trt_sparse.commands." + module)
        except ModuleNotFoundError as exc:
            if exc.name != "trt_sparse.commands." + module:
                raise
    return loaded


def build_parser():
    """Return the argparse parser with every available sub-command."""
    parser = argparse.ArgumentParser(
        prog="trt-sparse",
        description="Turn pruned CNNs into faster TensorRT engines with the SparseConv2d plugin.",
    )
    parser.add_argument("--version", action="version", version="trt-sparse " + __version__)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name, module in _load_commands().items():
        p = sub.add_parser(name, help=module.HELP, description=module.HELP)
        module.add_arguments(p)
        p.set_defaults(_run=module.run)
    return parser


def main(argv=None):
    """Entry point of ``trt-sparse``; returns the process exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args._run(args) or 0)
    except TrtSparseError as exc:
        print("trt-sparse {}: error: {}".format(args.command, exc), file=sys.stderr)
        return 2
    except (FileNotFoundError, IsADirectoryError, PermissionError) as exc:
        print("trt-sparse {}: error: {}".format(args.command, exc), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("trt-sparse: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # stdout closed early (e.g. `trt-sparse inspect m.onnx | head`): exit quietly
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
