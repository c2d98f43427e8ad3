"""Sub-commands of the trt-sparse CLI (see trt_sparse.cli)."""


def add_input_shape_argument(parser, purpose="with dynamic dims other than the batch"):
    """``--input-shape NAME:D0xD1x...`` (repeatable; parsed by ``trt_sparse.verify.parse_input_shapes``)."""
    parser.add_argument("--input-shape", action="append", default=[], metavar="NAME:D0xD1x...",
                        help="static shape of a graph input {} (repeatable)".format(purpose))
