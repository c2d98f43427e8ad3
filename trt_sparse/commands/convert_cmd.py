"""``trt-sparse convert``: rewrite pruned Conv nodes into SparseConv2d plugin nodes, verified."""
import os
import sys

from . import add_input_shape_argument

HELP = "rewrite pruned Conv nodes of an ONNX model into SparseConv2d plugin nodes (verified, with a report)"


def add_arguments(p):
    """Flags of ``trt-sparse convert``."""
    from ..policy import DEFAULT_MIN_SPARSITY, DEFAULT_MODEL_MARGIN, POLICIES

    p.add_argument("input", help="ONNX model with pruned (sparse) Conv weights")
    p.add_argument("-o", "--output", required=True, help="rewritten ONNX model (never the input)")
    p.add_argument("--policy", choices=POLICIES, default="threshold",
                   help="layer selection: threshold (sparsity only), model (trt_sparse.cost_model), "
                        "measured (a bench-kernels JSON); default threshold")
    p.add_argument("--min-sparsity", type=float, default=None,
                   help="convert only layers at least this sparse (default {} for threshold, 0 for "
                        "model/measured)".format(DEFAULT_MIN_SPARSITY))
    p.add_argument("--measurements", metavar="FILE", help="trt-sparse bench-kernels JSON for --policy measured")
    p.add_argument("--model-margin", type=float, default=None, metavar="X",
                   help="--policy model converts a layer only if its predicted speedup is > X (default {:g}, about "
                        "one median model error; 1 converts every predicted win)".format(DEFAULT_MODEL_MARGIN))
    p.add_argument("--batch", type=int, default=1,
                   help="batch size for the dynamic batch dim (speed policies, shape inference, verification)")
    p.add_argument("--dtype", choices=("auto", "fp32", "fp16"), default="auto",
                   help="engine precision the speed policies assume (auto: the model's)")
    p.add_argument("--weights", choices=("auto", "exact", "packed32"), default="auto",
                   help="exact: fp32 values + int32 indices; packed32: one 32-bit word per nonzero (fp16 values, "
                        "reports the rounding error); auto (default): packed32 for layers where it is lossless "
                        "(fp16 weights), else exact -- an fp32 model is never rounded")
    p.add_argument("--allow-tf32", action="store_true",
                   help="let the plugin run fp32 layers with TF32 tensor-core math (writes allow_tf32=1 on their "
                        "SparseConv2d nodes; 10-bit mantissa products, ~1e-3 relative error, faster on sm_80+); "
                        "default: exact fp32. Verification is unaffected (it checks the rewrite in float64)")
    p.add_argument("--exclude", action="append", default=[], metavar="PATTERN",
                   help="keep Conv layers whose node name matches this shell pattern dense (repeatable)")
    p.add_argument("--no-fuse", action="store_true", help="do not fold BatchNormalization / fuse Relu, Clip")
    add_input_shape_argument(p)
    p.add_argument("--external-data", action="store_true",
                   help="write tensors to OUTPUT.data beside the model (needed above 2 GB)")
    p.add_argument("--no-verify", action="store_true", help="skip the numerical verification")
    p.add_argument("--atol", type=float, default=None, help="verification: absolute tolerance (default 1e-6)")
    p.add_argument("--rtol", type=float, default=None,
                   help="verification: tolerance relative to max|output| (default 1e-4 exact, 1e-2 packed32)")
    p.add_argument("--seed", type=int, default=0, help="verification: seed of the random inputs")
    p.add_argument("--report", metavar="FILE", help="also write the report to FILE (.json or .md)")
    p.add_argument("-q", "--quiet", action="store_true", help="print only the totals, not the per-layer table")


def check_paths(input_path, output_path, report=None, external_data=False):
    """Fail early (before any work) on an output equal to the input or in a missing directory."""
    from ..errors import TrtSparseError

    if not os.path.exists(input_path):
        raise TrtSparseError("no such file: {}".format(input_path))
    same = os.path.exists(output_path) and os.path.samefile(input_path, output_path)
    if same or os.path.realpath(input_path) == os.path.realpath(output_path):
        raise TrtSparseError("output {} is the input; choose another output path".format(output_path))
    if external_data and os.path.realpath(output_path + ".data") == os.path.realpath(input_path):
        raise TrtSparseError("output data file {}.data would overwrite the input".format(output_path))
    out_dir = os.path.dirname(os.path.abspath(output_path))
    if not os.path.isdir(out_dir):
        raise TrtSparseError("output directory does not exist: {}".format(out_dir))
    if report:
        if os.path.splitext(report)[1].lower() not in (".json", ".md", ".markdown"):
            raise TrtSparseError("--report {}: use a .json or .md file name".format(report))
        if os.path.realpath(report) in (os.path.realpath(input_path), os.path.realpath(output_path)):
            raise TrtSparseError("--report {} would overwrite a model file".format(report))


def run(args):
    """Convert, check, verify, then write the model and the report."""
    from .. import report as rpt
    from ..convert import ConvertOptions, check_output_model, convert_model, mark_attribute_tensors_external
    from ..errors import TrtSparseError
    from ..onnx_io import load_model, save_model_atomic
    from ..policy import make_policy
    from ..verify import parse_input_shapes, verify_models

    check_paths(args.input, args.output, args.report, args.external_data)
    if args.batch < 1:
        raise TrtSparseError("--batch must be >= 1")
    shapes = parse_input_shapes(args.input_shape)
    if args.measurements and args.policy != "measured":
        raise TrtSparseError("--measurements is only used with --policy measured")
    model = load_model(args.input)
    dtype = None if args.dtype == "auto" else args.dtype
    policy = make_policy(args.policy, args.min_sparsity, args.measurements, args.batch, dtype, args.model_margin)
    options = ConvertOptions(policy=policy, weights=args.weights, fuse=not args.no_fuse,
                             input_shapes=shapes, batch=args.batch, exclude=args.exclude,
                             allow_tf32=args.allow_tf32)
    result = convert_model(model, options)
    check_note = check_output_model(result.model, original=model, original_path=args.input)
    if not args.no_verify and result.converted:
        if not args.quiet:
            print("verifying: original in onnxruntime vs rewritten ({} SparseConv2d nodes by trt_sparse.reference) "
                  "...".format(len(result.converted)), file=sys.stderr)
        result.verification = verify_models(model, result.model, atol=args.atol, rtol=args.rtol,
                                            input_shapes=shapes, batch=args.batch, seed=args.seed,
                                            mode=args.weights, original_path=args.input)
    text = rpt.totals_line(result) if args.quiet else rpt.format_table(result)
    if args.quiet and result.verification is not None:
        text += "\n" + result.verification.summary()
    print(text)
    if result.verification is not None and not result.verification.passed:
        raise TrtSparseError("verification failed (max relative error {:.3g} > rtol {:g}); {} not written "
                             "(--atol/--rtol to loosen, --no-verify to skip)".format(
                                 result.verification.max_rel, result.verification.rtol, args.output))
    if args.external_data:
        mark_attribute_tensors_external(result.model, os.path.basename(args.output) + ".data")
    save_model_atomic(result.model, args.output, src_path=args.input, external_data=args.external_data)
    if check_note and check_note.startswith("not checked"):
        check_note = check_output_model(result.model, args.output, model, args.input)
    if check_note:
        print("warning: " + check_note, file=sys.stderr)
    if args.report:
        rpt.write_report(result, args.report, args.input, args.output)
    if not result.converted:
        print("warning: no layer was converted; {} computes the same as the input".format(args.output),
              file=sys.stderr)
    print("wrote {}{}".format(args.output, " and " + args.report if args.report else ""))
    return 0
