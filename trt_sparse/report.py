"""Per-layer report of ``trt-sparse convert``: a table on stdout, JSON or Markdown files."""
import collections
import datetime
import json
import os
import tempfile

from . import __version__
from .errors import TrtSparseError


def _shape(v):
    return "x".join(str(d) for d in v) if v else "-"


def _geom(layer):
    if layer.strides is None:
        return "-"
    return "s{} p{} d{}".format(
        ",".join(str(v) for v in layer.strides), ",".join(str(v) for v in layer.pads),
        ",".join(str(v) for v in layer.dilations))


def _mib(n):
    return "{:.2f} MiB".format(n / 1048576.0) if n is not None else "-"


def rows(result):
    """List of row tuples (strings) for the tables."""
    out = []
    for layer in result.layers:
        out.append((
            layer.name,
            _shape(layer.weight_shape),
            _shape(layer.input_hw),
            _geom(layer),
            "{:.3f}".format(layer.sparsity) if layer.sparsity is not None else "-",
            str(layer.nnz) if layer.nnz is not None else "-",
            layer.decision,
            "+".join(layer.fused) if layer.converted and layer.fused else "-",
            ((layer.weight_format or "-") + ("+tf32" if layer.allow_tf32 else "")) if layer.converted else "-",
            str(layer.packed_bytes) if layer.converted else "-",
            "{:.2f}".format(layer.predicted_speedup) if layer.predicted_speedup is not None else "-",
            layer.reason or "",
        ))
    return out


HEADER = ("layer", "weight KxCxRxS", "input HxW", "stride/pad/dil", "sparsity", "nnz", "decision", "fused",
          "weights", "packed B", "speedup", "reason")


def totals_line(result):
    """One line with the totals."""
    t = result.totals()
    line = "converted {} of {} Conv layers; Conv weight bytes {} -> {}".format(
        t["converted"], t["conv_layers"], _mib(t["weight_bytes_before"]), _mib(t["weight_bytes_after"]))
    if t["weight_bytes_ratio"] is not None:
        line += " ({:.1%})".format(t["weight_bytes_ratio"])
    errs = [layer.packed32_max_abs_err for layer in result.converted if layer.packed32_max_abs_err is not None]
    if errs:
        rel = max(layer.packed32_max_rel_err for layer in result.converted if layer.packed32_max_rel_err is not None)
        line += "; packed32 weight rounding: max abs {:.3g}, max rel {:.3g}".format(max(errs), rel)
    if result.options.allow_tf32:
        line += "; TF32 allowed on {} of {} converted layers (fp32 layers only)".format(
            t["tf32_layers"], t["converted"])
    return line


def format_table(result, name_width=40):
    """Plain-text table (fixed-width columns; long layer names keep their tail)."""
    table = [tuple(HEADER)] + rows(result)
    table = [(r[0][-name_width:],) + tuple(r[1:]) for r in table]
    widths = [max(len(r[i]) for r in table) for i in range(len(HEADER) - 1)]
    lines = []
    for r in table:
        lines.append("  ".join(c.ljust(w) for c, w in zip(r[:-1], widths)) + "  " + r[-1])
    lines.insert(1, "  ".join("-" * w for w in widths) + "  " + "-" * 6)
    lines.append(totals_line(result))
    if result.verification is not None:
        lines.append(result.verification.summary())
    return "\n".join(lines)


def to_dict(result, input_path=None, output_path=None):
    """JSON-friendly report."""
    doc = collections.OrderedDict()
    doc["tool"] = "trt-sparse {}".format(__version__)
    doc["date"] = datetime.datetime.utcnow().replace(microsecond=0).isoformat() + "Z"
    doc["input"] = input_path
    doc["output"] = output_path
    doc["options"] = result.options.to_dict()
    doc["seconds"] = round(result.seconds, 3)
    doc["totals"] = result.totals()
    doc["verification"] = result.verification.to_dict() if result.verification is not None else None
    doc["layers"] = [layer.to_dict() for layer in result.layers]
    return doc


def to_markdown(result, input_path=None, output_path=None):
    """Markdown report: a header, the totals, the verification and the per-layer table."""
    lines = ["# trt-sparse convert report", ""]
    if input_path:
        lines.append("- input: `{}`".format(input_path))
    if output_path:
        lines.append("- output: `{}`".format(output_path))
    lines.append("- options: `{}`".format(json.dumps(result.options.to_dict())))
    lines.append("- " + totals_line(result))
    if result.verification is not None:
        lines.append("- " + result.verification.summary())
    lines += ["", "| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    for r in rows(result):
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in r) + " |")
    return "\n".join(lines) + "\n"


def write_report(result, path, input_path=None, output_path=None):
    """Write the report as JSON (``.json``) or Markdown (``.md``) atomically."""
    ext = os.path.splitext(path)[1].lower()
    if ext == ".json":
        text = json.dumps(to_dict(result, input_path, output_path), indent=2) + "\n"
    elif ext in (".md", ".markdown"):
        text = to_markdown(result, input_path, output_path)
    else:
        raise TrtSparseError("--report {}: use a .json or .md file name".format(path))
    write_text_atomic(path, text)


def write_text_atomic(path, text):
    """Write ``text`` to ``path`` through a temp file in the same directory + os.replace."""
    out_dir = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(out_dir):
        raise TrtSparseError("directory does not exist: {}".format(out_dir))
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=out_dir)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
