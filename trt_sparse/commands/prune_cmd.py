"""``trt-sparse prune``: magnitude-prune Conv weights of an ONNX model (experiments only)."""

HELP = "magnitude-prune Conv weights (for experiments: accuracy needs fine-tuning in the training framework)"


def add_arguments(p):
    """Flags of ``trt-sparse prune``."""
    p.add_argument("input", help="ONNX model")
    p.add_argument("-o", "--output", required=True, help="pruned ONNX model (never the input)")
    p.add_argument("--sparsity", type=float, required=True, help="fraction of Conv weights to zero, in [0, 1)")
    p.add_argument("--scope", choices=("layer", "global"), default="layer",
                   help="layer: every Conv gets the sparsity; global: one magnitude threshold for all")
    p.add_argument("--skip-first-last", action="store_true", help="leave the first and the last Conv dense")
    p.add_argument("--pattern", default="unstructured", metavar="unstructured|vector:V",
                   help="vector:V makes groups of V output channels share zero positions (layer scope)")
    p.add_argument("--external-data", action="store_true", help="write tensors to OUTPUT.data (above 2 GB)")
    p.add_argument("-q", "--quiet", action="store_true", help="print only the summary line")


def run(args):
    """Prune and write atomically."""
    from ..onnx_io import load_model, save_model_atomic
    from ..prune import format_rows, parse_pattern, prune_model
    from .convert_cmd import check_paths

    check_paths(args.input, args.output, None, args.external_data)
    parse_pattern(args.pattern)
    model = load_model(args.input)
    rows = prune_model(model, args.sparsity, args.scope, args.skip_first_last, args.pattern)
    save_model_atomic(model, args.output, src_path=args.input, external_data=args.external_data)
    text = format_rows(rows)
    print(text.splitlines()[-1] if args.quiet else text)
    print("note: magnitude pruning without fine-tuning destroys accuracy; use it for speed experiments, "
          "prune and fine-tune in your training framework for deployment")
    print("wrote {}".format(args.output))
    return 0
