#!/usr/bin/env python3
"""Parse trtexec output and tegrastats / nvidia-smi power logs; write the benchmark summary.

Standard library only, Python 3.6 compatible (JetPack 4.6 ships Python 3.6), so it runs on a
Jetson without installing anything.  Used by bench.sh; also usable alone:

    python3 trtexec_parse.py parse run.log                 # one trtexec log -> JSON
    python3 trtexec_parse.py power tegrastats.log          # power samples -> JSON
    python3 trtexec_parse.py summary runs.csv --text summary.txt --csv summary.csv

The trtexec formats handled are those printed by samples/common/sampleReporting.cpp of
TensorRT 8.x (one ``percentile(P%)`` per line, ``End-to-End Host Latency`` line) and 10.x
(several percentiles, no end-to-end line, coefficient-of-variance warning).
"""

import argparse
import csv
import json
import os
import re
import statistics
import sys
import tempfile

__all__ = [
    "TrtexecParseError",
    "parse_trtexec_log",
    "parse_trtexec_file",
    "parse_version_tag",
    "parse_power_log",
    "read_manifest",
    "summarize",
    "format_text",
    "write_csv",
    "main",
]


class TrtexecParseError(ValueError):
    """A trtexec log, power log or manifest could not be used; the message is one line."""


# "[12/02/2026-12:00:00] [I] " -- the sample logger's prefix (samples/common/logging.h).
_PREFIX_RE = re.compile(r"^\[\d{2}/\d{2}/\d{4}-\d{2}:\d{2}:\d{2}\]\s+\[([FEWIV])\]\s?")
_NUM = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[-+]?inf|nan"
_PERF_ITEM_RE = re.compile(r"(min|max|mean|median|percentile\((" + _NUM + r")%\))\s*=\s*(" + _NUM + r")\s*ms")
_TAG_RE = re.compile(r"&&&&\s+(RUNNING|PASSED|FAILED|WAIVED)\s+(\S+)\s+\[TensorRT v(\d+)\]")
# "Created input binding for NAME with dimensions 1x3x224x224" (8.x) /
# "Input binding for NAME with dimensions 1x3x224x224 is created." (10.x)
_BINDING_RE = re.compile(r"^(?:Created (input|output)|(Input|Output)) binding for (.+) with dimensions (\S+)")
_METRIC_NAMES = {
    "Latency": "latency",
    "End-to-End Host Latency": "end_to_end",
    "Enqueue Time": "enqueue",
    "H2D Latency": "h2d",
    "GPU Compute Time": "gpu_compute",
    "D2H Latency": "d2h",
}
_SIMPLE_PATTERNS = [
    ("trt_version", re.compile(r"^TensorRT version:\s*(\d+\.\d+\.\d+)"), str),
    ("device", re.compile(r"^Selected Device:\s*(.+?)\s*$"), str),
    ("compute_capability", re.compile(r"^Compute Capability:\s*(\d+\.\d+)"), str),
    ("throughput_qps", re.compile(r"^Throughput:\s*(" + _NUM + r")\s*qps"), float),
    ("total_host_walltime_s", re.compile(r"^Total Host Walltime:\s*(" + _NUM + r")\s*s"), float),
    ("total_gpu_compute_s", re.compile(r"^Total GPU Compute Time:\s*(" + _NUM + r")\s*s"), float),
    ("build_time_s", re.compile(r"^Engine built in\s*(" + _NUM + r")\s*sec"), float),
    ("load_time_s", re.compile(r"^Engine loaded in\s*(" + _NUM + r")\s*sec"), float),
    ("engine_size_mib", re.compile(r"^(?:Created|Loaded) engine with size:\s*(" + _NUM + r")\s*MiB"), float),
    ("queries", re.compile(r"^Timing trace has\s*(\d+)\s*queries"), int),
    ("coeff_var_percent", re.compile(r"coefficient of variance =\s*(" + _NUM + r")%"), float),
    ("percentiles_option", re.compile(r"^Percentiles?:\s*([\d.,\s]+)$"), str),
    ("cuda_graph", re.compile(r"^CUDA Graph:\s*(\w+)"), str),
    ("data_transfers", re.compile(r"^Data transfers:\s*(\w+)"), str),
]


def parse_version_tag(number):
    """Turn trtexec's ``[TensorRT vNNNN]`` number into "major.minor.patch".

    TensorRT < 10 encodes major*1000 + minor*100 + patch (8.2.1 -> 8201); TensorRT >= 10
    encodes major*10000 + minor*100 + patch (10.3.0 -> 100300).
    """
    n = int(number)
    if n >= 100000:
        return "{}.{}.{}".format(n // 10000, (n // 100) % 100, n % 100)
    return "{}.{}.{}".format(n // 1000, (n // 100) % 10, n % 100)


def _strip_prefix(line):
    """Return (severity letter or None, message) for one trtexec output line."""
    m = _PREFIX_RE.match(line)
    if m:
        return m.group(1), line[m.end():]
    m = re.match(r"^\[([FEWIV])\]\s?", line)
    if m:
        return m.group(1), line[m.end():]
    return None, line


def _parse_perf(text, where):
    """Parse "min = a ms, max = b ms, mean = ..., median = ..., percentile(P%) = x ms"."""
    out = {"percentiles": {}}
    for m in _PERF_ITEM_RE.finditer(text):
        key, pct, value = m.group(1), m.group(2), float(m.group(3))
        if pct is not None:
            out["percentiles"][_pct_key(float(pct))] = value
        else:
            out[key] = value
    missing = [k for k in ("min", "max", "mean", "median") if k not in out]
    if missing:
        raise TrtexecParseError("{}: cannot read {} from: {}".format(where, "/".join(missing), text.strip()))
    return out


def _pct_key(p):
    """Percentile key as trtexec prints it: 99 -> "99", 99.9 -> "99.9"."""
    return ("%g" % p)


def parse_trtexec_log(text, source="<log>"):
    """Parse the text of one trtexec run (stdout+stderr) into a dict.

    Keys: status (PASSED/FAILED/None), trt_version, device, compute_capability,
    throughput_qps, metrics {latency, gpu_compute, enqueue, h2d, d2h[, end_to_end]} each
    {min, max, mean, median, percentiles{"99": ms}}, has_summary, errors, warnings, plus
    build/load time and engine size when trtexec printed them.  Raises TrtexecParseError
    only for a malformed performance line; a log without a summary gives has_summary False.
    """
    info = {
        "source": source,
        "status": None,
        "trt_version": None,
        "trt_version_tag": None,
        "has_summary": False,
        "metrics": {},
        "errors": [],
        "warnings": [],
        "inputs": [],
        "outputs": [],
    }
    in_summary = False
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip("\r\n")
        tag = _TAG_RE.search(line)
        if tag:
            info["trt_version_tag"] = parse_version_tag(tag.group(3))
            if tag.group(1) != "RUNNING":
                info["status"] = tag.group(1)
            continue
        sev, msg = _strip_prefix(line)
        if sev in ("E", "F"):
            info["errors"].append(msg.strip())
        elif sev == "W":
            info["warnings"].append(msg.strip())
        if msg.startswith("[TRT]"):
            continue  # builder/runtime messages never carry the summary
        b = _BINDING_RE.match(msg)
        if b:
            kind = (b.group(1) or b.group(2)).lower() + "s"
            entry = [b.group(3), b.group(4).rstrip(".")]
            if entry not in info[kind]:
                info[kind].append(entry)
            continue
        if msg.startswith("=== Performance summary ==="):
            in_summary = True
            info["has_summary"] = True
            info["metrics"] = {}
            continue
        if msg.startswith("==="):
            in_summary = False
        if in_summary and ":" in msg:
            name, _, rest = msg.partition(":")
            key = _METRIC_NAMES.get(name.strip())
            if key is not None:
                info["metrics"][key] = _parse_perf(rest, "{}:{}: {}".format(source, lineno, name.strip()))
                continue
        for key, pattern, conv in _SIMPLE_PATTERNS:
            m = pattern.search(msg)
            if m:
                info[key] = conv(m.group(1))
                break
    if info["trt_version"] is None:
        info["trt_version"] = info["trt_version_tag"]
    if info["has_summary"]:
        for required in ("latency", "gpu_compute"):
            if required not in info["metrics"]:
                raise TrtexecParseError("{}: performance summary has no '{}' line".format(
                    source, "Latency" if required == "latency" else "GPU Compute Time"))
        if "throughput_qps" not in info:
            raise TrtexecParseError("{}: performance summary has no 'Throughput' line".format(source))
    return info


def parse_trtexec_file(path):
    """Read and parse one trtexec log file (see parse_trtexec_log)."""
    return parse_trtexec_log(_read_text(path), source=path)


def _read_text(path):
    try:
        with open(path, "r", encoding="utf-8", errors="replace") as f:
            return f.read()
    except (IOError, OSError) as e:
        raise TrtexecParseError("cannot read {}: {}".format(path, e.strerror or e))


# ---------------------------------------------------------------- power logs

# Rails that measure the whole module input, most specific first (Orin Nano/NX: VDD_IN,
# Nano/TX1: POM_5V_IN, TX2: VDD_IN, AGX Orin: VIN_SYS_5V0 (5 V system rail)).
TOTAL_RAILS = ("VDD_IN", "POM_5V_IN", "VIN_SYS_5V0", "VIN", "SYS5V")
# GPU (or GPU-shared) rails: AGX Orin VDD_GPU_SOC, Orin Nano/NX VDD_CPU_GPU_CV, Nano
# POM_5V_GPU, TX2 VDD_SYS_GPU, Xavier VDD_GPU (JetPack 5) / GPU (JetPack 4).
GPU_RAILS = ("VDD_GPU_SOC", "VDD_CPU_GPU_CV", "POM_5V_GPU", "VDD_SYS_GPU", "VDD_GPU", "GPU")
_RAIL_RE = re.compile(r"(?<![\w\[@%])([A-Z][A-Z0-9_]*)\s+(\d+)(?:mW)?/(\d+)(?:mW)?(?=\s|$)")
_NOT_RAILS = frozenset(["RAM", "SWAP", "IRAM", "LFB"])
_SMI_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(?:W)?\s*$")


def parse_power_log(text, trim=0.1, source="<power>"):
    """Parse a tegrastats log or an ``nvidia-smi --query-gpu=power.draw`` sample log.

    Returns {"kind": "tegrastats"|"nvidia-smi", "samples": n, "rails": {name: mean mW},
    "total_rail", "total_mw", "gpu_rail", "gpu_mw"}.  ``trim`` drops that fraction of the
    samples at each end (engine loading and teardown).  Raises TrtexecParseError when the
    file has no power sample.
    """
    if not 0.0 <= trim < 0.5:
        raise TrtexecParseError("trim must be in [0, 0.5), got {}".format(trim))
    lines = [ln for ln in text.splitlines() if ln.strip()]
    teg = []
    smi = []
    for ln in lines:
        rails = {}
        for m in _RAIL_RE.finditer(ln):
            name = m.group(1)
            if name not in _NOT_RAILS:
                rails[name] = float(m.group(2))
        if rails:
            teg.append(rails)
            continue
        m = _SMI_RE.match(ln)
        if m:
            smi.append(float(m.group(1)) * 1000.0)
    if teg:
        kind, samples = "tegrastats", _trim(teg, trim)
        names = sorted(set(k for s in samples for k in s))
        rails = {}
        for name in names:
            vals = [s[name] for s in samples if name in s]
            rails[name] = sum(vals) / len(vals)
    elif smi:
        kind, samples = "nvidia-smi", _trim(smi, trim)
        rails = {"GPU_BOARD": sum(samples) / len(samples)}
    else:
        raise TrtexecParseError("{}: no tegrastats power rail or nvidia-smi power sample found".format(source))
    out = {"kind": kind, "samples": len(samples), "rails": rails,
           "total_rail": None, "total_mw": None, "gpu_rail": None, "gpu_mw": None}
    if kind == "nvidia-smi":
        out.update(total_rail="GPU_BOARD", total_mw=rails["GPU_BOARD"], gpu_rail="GPU_BOARD", gpu_mw=rails["GPU_BOARD"])
        return out
    for name in TOTAL_RAILS:
        if name in rails:
            out["total_rail"], out["total_mw"] = name, rails[name]
            break
    for name in GPU_RAILS:
        if name in rails:
            out["gpu_rail"], out["gpu_mw"] = name, rails[name]
            break
    return out


def _trim(samples, trim):
    k = int(len(samples) * trim)
    kept = samples[k:len(samples) - k]
    return kept if kept else samples


# ---------------------------------------------------------------- output check

def _dims(text):
    try:
        dims = [int(d) for d in text.split("x")]
    except ValueError:
        raise TrtexecParseError("binding dimensions '{}' are not static (pass --shapes)".format(text))
    if any(d < 1 for d in dims):
        raise TrtexecParseError("binding dimensions '{}' are not static (pass --shapes)".format(text))
    return dims


def make_inputs(info, out_dir, seed=0):
    """Write one float32 file of uniform [-1, 1) values per input binding of a parsed run log.

    Returns trtexec's --loadInputs spec "name:file[,name:file]".  Inputs are assumed to be
    fp32 (trtexec's default I/O format).
    """
    import array
    import random

    if not info["inputs"]:
        raise TrtexecParseError("{}: no input binding lines in the log".format(info["source"]))
    rng = random.Random(seed)
    specs = []
    for name, dims_text in info["inputs"]:
        count = 1
        for d in _dims(dims_text):
            count *= d
        if ":" in name or "," in name:
            raise TrtexecParseError("input name '{}' contains ':' or ',' (trtexec --loadInputs cannot take it)".format(name))
        path = os.path.join(out_dir, re.sub(r"[^A-Za-z0-9_.-]", "_", name) + ".bin")
        data = array.array("f", (rng.uniform(-1.0, 1.0) for _ in range(count)))
        if sys.byteorder != "little":
            data.byteswap()
        folder = os.path.dirname(os.path.abspath(path))
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=folder)
        with os.fdopen(fd, "wb") as f:
            data.tofile(f)
        os.replace(tmp, path)
        specs.append("{}:{}".format(name, path))
    return ",".join(specs)


def read_output_export(path):
    """Read a trtexec --exportOutput JSON file into {name: (dims, [values])}."""
    text = _read_text(path)
    # trtexec prints non-finite floats as inf / nan, which JSON does not allow
    text = re.sub(r"(?<![\w.])(-?)inf\b", r"\1Infinity", text)
    text = re.sub(r"(?<![\w.])-?nan\b", "NaN", text)
    try:
        data = json.loads(text)
    except ValueError as e:
        raise TrtexecParseError("{}: not a trtexec --exportOutput JSON file ({})".format(path, e))
    out = {}
    for item in data if isinstance(data, list) else []:
        if isinstance(item, dict) and "name" in item and "values" in item:
            out[item["name"]] = (item.get("dimensions", ""), [float(v) for v in item["values"]])
    if not out:
        raise TrtexecParseError("{}: no outputs in the file".format(path))
    return out


def compare_outputs(dense, sparse, tol):
    """Compare two exports (read_output_export) output by output.

    Per output: max_abs_diff, ref_max_abs (max |dense|), rel_err = max_abs_diff / ref_max_abs,
    argmax_equal (the top-1 class agrees) and ok (rel_err <= tol, all values finite).
    """
    import math

    rows = []
    for name in sorted(dense):
        if name not in sparse:
            raise TrtexecParseError("output '{}' is missing from the sparse engine's export".format(name))
        d, s = dense[name][1], sparse[name][1]
        if len(d) != len(s):
            raise TrtexecParseError("output '{}' has {} values dense but {} sparse".format(name, len(d), len(s)))
        finite = all(math.isfinite(v) for v in s) and all(math.isfinite(v) for v in d)
        diff = max((abs(a - b) for a, b in zip(d, s)), default=0.0) if finite else float("inf")
        ref = max((abs(a) for a in d), default=0.0)
        rel = diff / ref if ref > 0 else (0.0 if diff == 0 else float("inf"))
        argmax_equal = bool(d) and d.index(max(d)) == s.index(max(s))
        rows.append({"output": name, "values": len(d), "max_abs_diff": diff, "ref_max_abs": ref,
                     "rel_err": rel, "argmax_equal": argmax_equal, "ok": finite and rel <= tol})
    return rows


# ---------------------------------------------------------------- summary

MANIFEST_FIELDS = ("model", "variant", "precision", "engine", "engine_bytes", "run", "log", "power_log")
SUMMARY_FIELDS = (
    "model", "precision", "variant", "runs", "trt_version", "device",
    "latency_median_ms", "latency_run_min_ms", "latency_run_max_ms", "latency_p99_ms",
    "gpu_compute_median_ms", "throughput_qps", "engine_mib",
    "speedup_latency", "speedup_gpu_compute", "speedup_throughput", "engine_size_ratio",
    "power_total_mw", "power_gpu_mw", "energy_per_inference_mj", "power_rail",
)


def read_manifest(path):
    """Read bench.sh's runs.csv manifest; relative log paths are taken from its folder."""
    base = os.path.dirname(os.path.abspath(path))
    text = _read_text(path)
    rows = list(csv.DictReader(text.splitlines()))
    if not rows:
        raise TrtexecParseError("{}: manifest has no runs".format(path))
    missing = [f for f in ("model", "variant", "precision", "log") if f not in rows[0]]
    if missing:
        raise TrtexecParseError("{}: manifest lacks column(s) {}".format(path, ", ".join(missing)))
    for i, row in enumerate(rows, 2):
        for key in ("log", "power_log", "engine"):
            val = (row.get(key) or "").strip()
            row[key] = os.path.join(base, val) if val and not os.path.isabs(val) else val
        if row["variant"] not in ("dense", "sparse"):
            raise TrtexecParseError("{}:{}: variant must be dense or sparse, got '{}'".format(path, i, row["variant"]))
    return rows


def _median(values):
    vals = [v for v in values if v is not None]
    return statistics.median(vals) if vals else None


def summarize(rows, trim=0.1):
    """Aggregate manifest rows (each one trtexec run) into one record per model/precision/variant.

    Per run trtexec already reports the median over its own timed queries; across runs we take
    the median of those medians (and report the min/max of them as the run-to-run spread).
    Speedups are dense/sparse for latency and GPU compute time, sparse/dense for throughput,
    so values > 1 mean the sparse engine is faster.
    """
    groups = {}
    order = []
    for row in rows:
        key = (row["model"], row["precision"], row["variant"])
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append(row)
    records = {}
    for key in order:
        runs = []
        powers = []
        for row in groups[key]:
            info = parse_trtexec_file(row["log"])
            if not info["has_summary"]:
                reason = info["errors"][-1] if info["errors"] else "no performance summary"
                raise TrtexecParseError("{}: trtexec run failed or did not time ({})".format(row["log"], reason))
            runs.append(info)
            if row.get("power_log"):
                try:
                    powers.append(parse_power_log(_read_text(row["power_log"]), trim=trim, source=row["power_log"]))
                except TrtexecParseError as e:  # a missing power log must not cost the timings
                    sys.stderr.write("trtexec_parse: warning: power ignored: {}\n".format(e))
        lat = [r["metrics"]["latency"]["median"] for r in runs]
        p99 = [r["metrics"]["latency"]["percentiles"].get("99") for r in runs]
        rec = {
            "model": key[0], "precision": key[1], "variant": key[2], "runs": len(runs),
            "trt_version": runs[0].get("trt_version") or "",
            "device": runs[0].get("device") or "",
            "latency_median_ms": _median(lat),
            "latency_run_min_ms": min(lat),
            "latency_run_max_ms": max(lat),
            "latency_p99_ms": _median(p99),
            "gpu_compute_median_ms": _median([r["metrics"]["gpu_compute"]["median"] for r in runs]),
            "throughput_qps": _median([r["throughput_qps"] for r in runs]),
            "engine_mib": _engine_mib(groups[key][0], runs),
            "power_total_mw": _median([p["total_mw"] for p in powers]),
            "power_gpu_mw": _median([p["gpu_mw"] for p in powers]),
            "power_rail": powers[0]["total_rail"] if powers else None,
        }
        if rec["power_total_mw"] is not None and rec["throughput_qps"]:
            rec["energy_per_inference_mj"] = rec["power_total_mw"] / rec["throughput_qps"]
        records[key] = rec
    out = []
    for key in order:
        rec = records[key]
        dense = records.get((key[0], key[1], "dense"))
        rec["speedup_latency"] = _ratio(dense and dense["latency_median_ms"], rec["latency_median_ms"])
        rec["speedup_gpu_compute"] = _ratio(dense and dense["gpu_compute_median_ms"], rec["gpu_compute_median_ms"])
        rec["speedup_throughput"] = _ratio(rec["throughput_qps"], dense and dense["throughput_qps"])
        rec["engine_size_ratio"] = _ratio(rec["engine_mib"], dense and dense["engine_mib"])
        out.append(rec)
    out.sort(key=lambda r: (r["model"], r["precision"], 0 if r["variant"] == "dense" else 1))
    return out


def _engine_mib(row, runs):
    size = (row.get("engine_bytes") or "").strip()
    if size:
        try:
            return int(size) / float(1 << 20)
        except ValueError:
            raise TrtexecParseError("engine_bytes '{}' is not an integer ({})".format(size, row["log"]))
    for r in runs:
        if r.get("engine_size_mib") is not None:
            return r["engine_size_mib"]
    return None


def _ratio(a, b):
    if a is None or b is None or b == 0:
        return None
    return a / b


def _fmt(value, digits=3):
    if value is None:
        return "-"
    if isinstance(value, float):
        return "{:.{}f}".format(value, digits)
    return str(value)


def format_text(records, title="trt-sparse engine benchmark (trtexec)"):
    """Render summary records as a fixed-width text table with a short legend."""
    cols = [
        ("model", "model", None), ("precision", "prec", None), ("variant", "variant", None),
        ("runs", "runs", None), ("latency_median_ms", "latency ms", 3),
        ("latency_p99_ms", "p99 ms", 3), ("gpu_compute_median_ms", "GPU ms", 3),
        ("throughput_qps", "qps", 1), ("speedup_latency", "speedup", 2),
        ("speedup_gpu_compute", "GPU spd", 2), ("engine_mib", "engine MiB", 2),
        ("power_total_mw", "power mW", 0), ("energy_per_inference_mj", "mJ/inf", 2),
    ]
    table = [[h for _, h, _ in cols]]
    for rec in records:
        table.append([_fmt(rec.get(k), d) if d is not None else _fmt(rec.get(k)) for k, _, d in cols])
    widths = [max(len(row[i]) for row in table) for i in range(len(cols))]
    lines = [title]
    versions = sorted(set(r["trt_version"] for r in records if r["trt_version"]))
    devices = sorted(set(r["device"] for r in records if r["device"]))
    lines.append("TensorRT {} | device: {}".format(", ".join(versions) or "?", ", ".join(devices) or "?"))
    lines.append("")
    for i, row in enumerate(table):
        lines.append("  ".join(c.rjust(w) if i and j >= 3 else c.ljust(w) for j, (c, w) in enumerate(zip(row, widths))).rstrip())
        if i == 0:
            lines.append("  ".join("-" * w for w in widths))
    lines.append("")
    lines.append("latency: median over runs of trtexec's median 'Latency' (H2D + GPU compute + D2H);")
    lines.append("GPU ms: same for 'GPU Compute Time'; speedup = dense / sparse (> 1: sparse faster);")
    rails = sorted(set(r["power_rail"] for r in records if r.get("power_rail")))
    if rails:
        lines.append("power: mean of rail {} during the timed runs; mJ/inf = power / throughput.".format(", ".join(rails)))
    return "\n".join(lines) + "\n"


def _atomic_write(path, text):
    """Write text to path through a temp file in the same folder and a rename."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_csv(records, path):
    """Write summary records as CSV (one row per model/precision/variant), atomically."""
    import io
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=SUMMARY_FIELDS, extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    for rec in records:
        w.writerow(dict((k, "" if rec.get(k) is None else (("%.6g" % rec[k]) if isinstance(rec[k], float) else rec[k]))
                        for k in SUMMARY_FIELDS))
    _atomic_write(path, buf.getvalue())


# ---------------------------------------------------------------- CLI

def _build_parser():
    p = argparse.ArgumentParser(
        prog="trtexec_parse.py",
        description="Parse trtexec logs and power logs; summarise a bench.sh run (stdlib only, Python >= 3.6).")
    sub = p.add_subparsers(dest="command")
    sp = sub.add_parser("parse", help="parse one trtexec log and print it as JSON")
    sp.add_argument("log")
    sp = sub.add_parser("power", help="parse one tegrastats / nvidia-smi power log and print it as JSON")
    sp.add_argument("log")
    sp.add_argument("--trim", type=float, default=0.1, help="fraction of samples dropped at each end (default 0.1)")
    sp = sub.add_parser("make-inputs", help="write random fp32 input files for the input bindings of a run log; "
                                             "prints the trtexec --loadInputs spec")
    sp.add_argument("log")
    sp.add_argument("--out-dir", required=True)
    sp.add_argument("--seed", type=int, default=0)
    sp = sub.add_parser("compare", help="compare dense and sparse --exportOutput files; exit 4 when they differ")
    sp.add_argument("dense")
    sp.add_argument("sparse")
    sp.add_argument("--tol", type=float, default=1e-3,
                    help="largest allowed max|dense - sparse| / max|dense| (default 1e-3)")
    sp.add_argument("--label", default="", help="text put in front of each printed line")
    sp = sub.add_parser("summary", help="summarise bench.sh's runs.csv into a text table and a CSV")
    sp.add_argument("manifest", help="runs.csv written by bench.sh")
    sp.add_argument("--text", help="write the text table here (default: print it)")
    sp.add_argument("--csv", help="write the CSV summary here")
    sp.add_argument("--json", help="write the summary records as JSON here")
    sp.add_argument("--trim", type=float, default=0.1, help="power samples dropped at each end (default 0.1)")
    return p


def main(argv=None):
    """Command-line entry point; returns the exit code (2 with a one-line error on bad input)."""
    parser = _build_parser()
    args = parser.parse_args(argv)
    if not args.command:
        parser.print_help()
        return 2
    try:
        if args.command == "parse":
            print(json.dumps(parse_trtexec_file(args.log), indent=2, sort_keys=True))
        elif args.command == "make-inputs":
            print(make_inputs(parse_trtexec_file(args.log), args.out_dir, seed=args.seed))
        elif args.command == "compare":
            rows = compare_outputs(read_output_export(args.dense), read_output_export(args.sparse), args.tol)
            for r in rows:
                print("{}{}: {} values, max|diff| {:.3g}, max|dense| {:.3g}, rel {:.3g} (tol {:g}), top-1 {}: {}".format(
                    args.label, r["output"], r["values"], r["max_abs_diff"], r["ref_max_abs"], r["rel_err"], args.tol,
                    "same" if r["argmax_equal"] else "DIFFERENT", "ok" if r["ok"] else "MISMATCH"))
            return 0 if all(r["ok"] for r in rows) else 4
        elif args.command == "power":
            print(json.dumps(parse_power_log(_read_text(args.log), trim=args.trim, source=args.log),
                             indent=2, sort_keys=True))
        else:
            records = summarize(read_manifest(args.manifest), trim=args.trim)
            text = format_text(records)
            if args.text:
                _atomic_write(args.text, text)
            if args.csv:
                write_csv(records, args.csv)
            if args.json:
                _atomic_write(args.json, json.dumps(records, indent=2, sort_keys=True) + "\n")
            sys.stdout.write(text)
    except TrtexecParseError as e:
        sys.stderr.write("trtexec_parse: error: {}\n".format(e))
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
