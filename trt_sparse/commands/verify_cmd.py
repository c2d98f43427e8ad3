"""``trt-sparse verify``: compare an original model with its rewritten (SparseConv2d) version."""
import sys

from . import add_input_shape_argument

HELP = "check that a rewritten model computes the same as the original (seeded random inputs)"


def add_arguments(p):
    """Flags of ``trt-sparse verify``."""
    p.add_argument("original", help="the original ONNX model (run in onnxruntime)")
    p.add_argument("sparse", help="the rewritten model (SparseConv2d nodes computed by trt_sparse.reference)")
    p.add_argument("--atol", type=float, default=None, help="absolute tolerance (default 1e-6)")
    p.add_argument("--rtol", type=float, default=None,
                   help="tolerance relative to max|output| (default 1e-4 exact, 1e-2 packed32 weights)")
    p.add_argument("--batch", type=int, default=1, help="size of a dynamic batch dim")
    add_input_shape_argument(p)
    p.add_argument("--seed", type=int, default=0, help="seed of the random inputs")


def run(args):
    """Print per-output errors; exit 0 when within tolerance, 1 when not."""
    from ..errors import TrtSparseError
    from ..onnx_io import load_model, tf32_layers
    from ..verify import parse_input_shapes, verify_models, weight_mode

    if args.batch < 1:
        raise TrtSparseError("--batch must be >= 1")
    shapes = parse_input_shapes(args.input_shape)
    original = load_model(args.original)
    sparse = load_model(args.sparse)
    if not any(n.op_type == "SparseConv2d" for n in sparse.graph.node):
        print("note: {} has no SparseConv2d node".format(args.sparse), file=sys.stderr)
    n_tf32 = len(tf32_layers(sparse))
    if n_tf32:
        # TF32 happens only in the plugin on the GPU; here the nodes are computed in float64 from their weights
        print("note: {} SparseConv2d node(s) allow TF32; verification checks the rewrite in float64 at the "
              "exact tolerances (the plugin's TF32 error, ~1e-3, is checked by trt-sparse bench)".format(n_tf32),
              file=sys.stderr)
    res = verify_models(original, sparse, atol=args.atol, rtol=args.rtol, input_shapes=shapes,
                        batch=args.batch, seed=args.seed, mode=weight_mode(sparse),
                        original_path=args.original)
    for o in res.outputs:
        print("{:<24} shape {:<16} max abs {:.3g}  max|y| {:.3g}  rel {:.3g}  {}".format(
            o.name, "x".join(str(d) for d in o.shape), o.max_abs, o.scale, o.rel, "ok" if o.passed else "FAIL"))
    print(res.summary())
    return 0 if res.passed else 1
