"""``trt-sparse demo``: build a small CNN in code, prune, convert, verify and print the report."""
import os
import shutil
import tempfile

HELP = "end-to-end demo on a built-in CNN: prune -> convert -> verify -> report (CPU only)"


def add_arguments(p):
    """Flags of ``trt-sparse demo``."""
    p.add_argument("--out-dir", help="keep the demo's models and report here (default: a temporary directory)")
    p.add_argument("--sparsity", type=float, default=0.9, help="pruning sparsity (default 0.9)")
    p.add_argument("--weights", choices=("auto", "exact", "packed32"), default="auto", help="weight encoding (see convert)")
    p.add_argument("--seed", type=int, default=0)


def run(args):
    """Run the demo; the temporary directory is removed unless --out-dir is given."""
    from ..demo import run_demo
    from ..errors import TrtSparseError

    if args.out_dir:
        if os.path.exists(args.out_dir) and not os.path.isdir(args.out_dir):
            raise TrtSparseError("--out-dir {} is not a directory".format(args.out_dir))
        os.makedirs(args.out_dir, exist_ok=True)
        run_demo(args.out_dir, args.sparsity, args.weights, args.seed)
        return 0
    tmp = tempfile.mkdtemp(prefix="trt-sparse-demo-")
    try:
        run_demo(tmp, args.sparsity, args.weights, args.seed)
        print("(temporary files removed; use --out-dir DIR to keep them)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0
