"""``trt-sparse build``: ONNX model -> serialized TensorRT engine (+ JSON sidecar)."""
import os
import sys

from ..errors import TrtSparseError

HELP = "build a TensorRT (or TensorRT-RTX) engine from an ONNX model, loading the SparseConv2d plugin"


def add_shape_arguments(parser):
    """--shapes / --min-shapes / --opt-shapes / --max-shapes (trtexec syntax)."""
    parser.add_argument("--shapes", metavar="SPEC",
                        help="fixed input shapes, e.g. input:1x3x224x224[,other:1x10]")
    parser.add_argument("--min-shapes", metavar="SPEC", help="smallest shapes of dynamic inputs (with --opt/--max)")
    parser.add_argument("--opt-shapes", metavar="SPEC", help="shapes TensorRT optimises for")
    parser.add_argument("--max-shapes", metavar="SPEC", help="largest shapes of dynamic inputs")


def add_build_arguments(parser):
    """Options shared by ``build`` and ``bench`` (when it builds engines)."""
    parser.add_argument("--plugin", metavar="LIB",
                        help="SparseConv2d plugin library (default: $TRT_SPARSE_PLUGIN_LIB or "
                             "build/libtrt_sparse_plugin.so when the model has SparseConv2d nodes)")
    parser.add_argument("--fp16", action="store_true",
                        help="fp16 engine (TensorRT 8/10: FP16 builder flag; TensorRT 11/RTX: the model is "
                             "converted to fp16, inputs/outputs stay fp32)")
    parser.add_argument("--workspace", metavar="SIZE", help="builder workspace limit, e.g. 1G or 512M")
    parser.add_argument("--timing-cache", metavar="FILE", help="timing cache read before and written after the build")
    parser.add_argument("--no-tf32", action="store_true", help="disable TF32 for fp32 layers (weakly typed builds)")
    parser.add_argument("--strongly-typed", action="store_true",
                        help="strongly typed network on TensorRT 10 (always on for TensorRT 11 and RTX)")
    parser.add_argument("--compute-capability", metavar="SM", action="append",
                        help="TensorRT-RTX target, e.g. SM86 (repeatable; default: TensorRT-RTX's choice)")
    parser.add_argument("--trt", dest="trt_backend", choices=("auto", "tensorrt", "rtx"), default="auto",
                        help="TensorRT flavour: tensorrt, rtx (TensorRT-RTX), auto (tensorrt, then rtx)")
    parser.add_argument("--verbose", action="store_true", help="show TensorRT's info messages")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")


def add_arguments(parser):
    parser.add_argument("model", help="ONNX model (dense or converted with SparseConv2d nodes)")
    parser.add_argument("-o", "--output", metavar="ENGINE",
                        help="engine file to write (default: MODEL.engine next to the model); "
                             "a JSON sidecar ENGINE.json records versions, precision, shapes and the plugin hash")
    add_shape_arguments(parser)
    add_build_arguments(parser)


def profiles_from_args(args):
    """{input: (min, opt, max)} from the shape options."""
    from ..engine import make_profiles

    return make_profiles(shapes=args.shapes, min_shapes=args.min_shapes, opt_shapes=args.opt_shapes,
                         max_shapes=args.max_shapes)


def build_kwargs(args):
    """Keyword arguments of engine.build_engine from the shared build options."""
    from ..engine import parse_size

    return dict(
        plugin_lib=args.plugin,
        precision="fp16" if args.fp16 else "fp32",
        workspace=parse_size(args.workspace) if args.workspace else None,
        timing_cache=args.timing_cache,
        tf32=not args.no_tf32,
        strongly_typed=True if args.strongly_typed else None,
        compute_capabilities=args.compute_capability,
        backend=args.trt_backend,
        verbose=args.verbose,
        progress=not args.no_progress,
    )


def run(args):
    from ..engine import build_engine

    if not os.path.isfile(args.model):
        raise TrtSparseError("model {} does not exist".format(args.model))
    output = args.output or os.path.splitext(args.model)[0] + ".engine"
    if os.path.abspath(output) == os.path.abspath(args.model):
        raise TrtSparseError("the output {} would overwrite the model; choose another -o".format(output))
    kwargs = build_kwargs(args)
    profiles = profiles_from_args(args)
    result = build_engine(args.model, shapes=profiles, save_path=output, **kwargs)
    meta = result.metadata
    trt = meta["tensorrt"]
    plugin = meta.get("plugin")
    print("wrote {} ({:.1f} MiB; {} {}, {}{}; parse {:.2f} s, build {:.2f} s){}".format(
        output, len(result.engine) / 2.0 ** 20, trt["flavour"], trt["version"], meta["precision"],
        ", strongly typed" if meta["strongly_typed"] else "", meta["parse_seconds"], meta["build_seconds"],
        "; plugin {} ({} SparseConv2d nodes)".format(os.path.basename(plugin["path"]),
                                                    meta["onnx"]["sparse_conv_nodes"]) if plugin else ""))
    sys.stdout.flush()
    return 0
