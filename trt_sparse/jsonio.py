"""Reading the JSON files the CLI takes as options, with one-line errors."""
import json
import os

from .errors import TrtSparseError


def load_json(path, what):
    """The parsed JSON document at `path`; `what` (e.g. "--layers") names the option in errors.

    Raises TrtSparseError when the file does not exist or is not valid JSON.
    """
    if not os.path.isfile(path):
        raise TrtSparseError("{}: no such file: {}".format(what, path))
    try:
        with open(path) as f:
            return json.load(f)
    except ValueError as exc:
        raise TrtSparseError("{} {} is not valid JSON: {}".format(what, path, exc))
