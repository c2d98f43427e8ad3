"""Benchmark reports of ``trt-sparse bench``: JSON, Markdown and a latency plot.

Report layout (JSON)::

    {"meta": {trt_sparse, tensorrt, device, cuda_backend, commit, date, host,
              precision, iterations, warmup, cuda_graph, seed, inputs},
     "check": {"ok", "rtol", "per_batch": {batch: {"ok", "outputs": {name: {max_abs, max_rel, ok}}}}},
     "results": [{"config", "model", "engine", "batch", "latency": {n, mean_ms, median_ms, p90_ms, ...},
                  "throughput_per_s", "device_memory": {...}, "layers": [[name, ms], ...]}],
     "speedup": [{"batch", "median", "mean", "p99"}]}

``speedup`` is dense latency / sparse latency (> 1: the sparse engine is faster).
"""
import collections
import datetime
import json
import os
import platform
import subprocess
import tempfile

from . import __version__
from .errors import TrtSparseError

REPORT_FORMATS = (".json", ".md")


def git_commit(path=None):
    """Commit hash of the git checkout holding ``path`` (default: this package), or None; env
    ``TRT_SPARSE_COMMIT`` overrides it (a tree copied to another machine without its git state)."""
    if os.environ.get("TRT_SPARSE_COMMIT"):
        return os.environ["TRT_SPARSE_COMMIT"]
    path = path or os.path.dirname(os.path.abspath(__file__))
    try:
        out = subprocess.run(["git", "-C", path, "rev-parse", "--short=12", "HEAD"], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.decode().strip() or None if out.returncode == 0 else None


def make_meta(tensorrt=None, device=None, cuda_backend=None, **extra):
    """Common report metadata: versions, device, commit, UTC date, host, plus ``extra``."""
    meta = collections.OrderedDict([
        ("trt_sparse", __version__),
        ("tensorrt", tensorrt),
        ("device", device),
        ("cuda_backend", cuda_backend),
        ("commit", git_commit()),
        ("date", datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")),
        ("host", platform.node()),
        ("python", platform.python_version()),
    ])
    meta.update(extra)
    return meta


def speedups(results):
    """Dense / sparse latency ratios per batch from ``results`` (configs named ``dense`` and ``sparse``)."""
    by = collections.defaultdict(dict)
    for r in results:
        by[r["batch"]][r["config"]] = r["latency"]
    out = []
    for batch in sorted(by):
        d, s = by[batch].get("dense"), by[batch].get("sparse")
        if not d or not s:
            continue
        row = collections.OrderedDict([("batch", batch)])
        for key in ("median", "mean", "p99"):
            den = s[key + "_ms"]
            row[key] = d[key + "_ms"] / den if den > 0 else None
        out.append(row)
    return out


def make_report(meta, results, check=None):
    """Assemble the report dict (see module docstring) and compute the speedups."""
    return collections.OrderedDict([
        ("meta", meta), ("check", check), ("results", list(results)), ("speedup", speedups(results)),
    ])


def _fmt_bytes(n):
    if n is None:
        return "n/a"
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return "{:.1f} {}".format(n, unit) if unit != "B" else "{:d} B".format(int(n))
        n /= 1024.0
    return str(n)  # pragma: no cover


def _fmt(x, spec="{:.3f}"):
    return "n/a" if x is None else spec.format(x)


def render_markdown(report, top_layers=10):
    """Human-readable Markdown of a report."""
    meta = report.get("meta") or {}
    lines = ["# trt-sparse benchmark", ""]
    trt = meta.get("tensorrt") or {}
    dev = meta.get("device") or {}
    lines.append("- TensorRT: {} {}".format(trt.get("flavour", "?"), trt.get("version", "?")))
    lines.append("- device: {} (compute {}), driver {}".format(
        dev.get("name") or "n/a", dev.get("compute_capability", "n/a"), dev.get("driver", "n/a")))
    for key in ("cuda_backend", "precision", "iterations", "warmup", "cuda_graph", "seed", "inputs", "commit", "date"):
        if key in meta:
            lines.append("- {}: {}".format(key.replace("_", " "), meta[key]))
    lines.append("")
    lines.append("| config | batch | median ms | p90 ms | p99 ms | mean ms | throughput /s | engine | activations |")
    lines.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in report["results"]:
        lat = r["latency"]
        mem = r.get("device_memory") or {}
        lines.append("| {} | {} | {} | {} | {} | {} | {} | {} | {} |".format(
            r["config"], r["batch"], _fmt(lat["median_ms"]), _fmt(lat["p90_ms"]), _fmt(lat["p99_ms"]),
            _fmt(lat["mean_ms"]), _fmt(r.get("throughput_per_s"), "{:.1f}"),
            _fmt_bytes(mem.get("engine_file_bytes")), _fmt_bytes(mem.get("activation_bytes"))))
    if report.get("speedup"):
        lines += ["", "## Speedup (dense / sparse latency)", "", "| batch | median | mean | p99 |", "|---:|---:|---:|---:|"]
        for s in report["speedup"]:
            lines.append("| {} | {} | {} | {} |".format(
                s["batch"], _fmt(s["median"], "{:.2f}x"), _fmt(s["mean"], "{:.2f}x"), _fmt(s["p99"], "{:.2f}x")))
    check = report.get("check")
    if check:
        lines += ["", "## Output check (sparse vs dense)", "",
                  "overall: **{}** (max relative error tolerance {})".format("match" if check["ok"] else "MISMATCH",
                                                                           check.get("rtol")), ""]
        lines += ["| batch | output | max abs | max rel | ok |", "|---:|---|---:|---:|---|"]
        for batch, entry in check.get("per_batch", {}).items():
            for name, o in entry["outputs"].items():
                lines.append("| {} | {} | {} | {} | {} |".format(
                    batch, name, _fmt(o.get("max_abs"), "{:.3g}"), _fmt(o.get("max_rel"), "{:.3g}"),
                    "yes" if o.get("ok") else "NO" + (" ({})".format(o["error"]) if o.get("error") else "")))
    for r in report["results"]:
        if r.get("layers"):
            lines += ["", "## Slowest layers: {} (batch {})".format(r["config"], r["batch"]), "",
                      "| layer | ms |", "|---|---:|"]
            for name, ms in r["layers"][:top_layers]:
                lines.append("| {} | {:.4f} |".format(str(name).replace("|", "\\|"), ms))
    return "\n".join(lines) + "\n"


def _atomic_write_text(path, text):
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", dir=directory)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        _publish(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


def _publish(tmp, path):
    mask = os.umask(0o022)
    os.umask(mask)
    os.chmod(tmp, 0o666 & ~mask)
    os.replace(tmp, path)


def write_report(report, path):
    """Write the report as JSON (``.json``) or Markdown (``.md``), atomically."""
    ext = os.path.splitext(path)[1].lower()
    if ext == ".json":
        _atomic_write_text(path, json.dumps(report, indent=2, allow_nan=False, default=_json_default) + "\n")
    elif ext == ".md":
        _atomic_write_text(path, render_markdown(report))
    else:
        raise TrtSparseError("report {}: use a .json or .md file name".format(path))


def _json_default(obj):
    try:
        import numpy as np

        if isinstance(obj, np.generic):
            return obj.item()
    except ImportError:  # pragma: no cover
        pass
    raise TypeError("not JSON serializable: {!r}".format(obj))


def plot_latency(report, path):
    """Bar chart of median latency per configuration and batch (p90-p99 whiskers); PNG/SVG/PDF by extension."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise TrtSparseError("--plot needs matplotlib: pip install 'trt-sparse[bench]'")
    results = report["results"]
    configs = list(collections.OrderedDict((r["config"], None) for r in results))
    batches = sorted({r["batch"] for r in results})
    width = 0.8 / max(len(configs), 1)
    fig, ax = plt.subplots(figsize=(max(4.0, 1.6 * len(batches) * max(len(configs), 1)), 3.6))
    for i, cfg in enumerate(configs):
        xs, meds, lo, hi = [], [], [], []
        for j, b in enumerate(batches):
            r = next((r for r in results if r["config"] == cfg and r["batch"] == b), None)
            if r is None:
                continue
            lat = r["latency"]
            xs.append(j + (i - (len(configs) - 1) / 2.0) * width)
            meds.append(lat["median_ms"])
            lo.append(max(lat["median_ms"] - lat["p90_ms"], 0.0))
            hi.append(max(lat["p99_ms"] - lat["median_ms"], 0.0))
        bars = ax.bar(xs, meds, width=width, label=cfg)
        ax.errorbar(xs, meds, yerr=[lo, hi], fmt="none", ecolor="black", capsize=3, linewidth=1)
        for bar, m in zip(bars, meds):
            ax.annotate("{:.2f}".format(m), (bar.get_x() + bar.get_width() / 2, m), ha="center", va="bottom",
                        fontsize=7, xytext=(0, 2), textcoords="offset points")
    ax.set_xticks(range(len(batches)))
    ax.set_xticklabels(["batch {}".format(b) for b in batches])
    ax.set_ylabel("latency (ms, median; whiskers p90..p99)")
    meta = report.get("meta") or {}
    dev = (meta.get("device") or {}).get("name") or "unknown device"
    ax.set_title("{} {} on {}".format((meta.get("tensorrt") or {}).get("flavour", "TensorRT"),
                                      meta.get("precision", ""), dev), fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    ext = os.path.splitext(path)[1] or ".png"
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=ext, dir=directory)
    os.close(fd)
    try:
        fig.savefig(tmp)
        _publish(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise
    finally:
        plt.close(fig)
