"""Exceptions the CLI turns into one-line messages with exit code 2."""


class TrtSparseError(Exception):
    """A user-facing error: bad input, unsupported model, missing dependency."""


class FormatError(TrtSparseError):
    """A packed sparse weight blob is malformed or cannot represent the weight."""


class UnsupportedError(TrtSparseError):
    """A model feature trt-sparse does not support (named in the message)."""
