"""Sub-commands of the trt-sparse CLI (see trt_sparse.cli)."""
