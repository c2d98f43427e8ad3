"""Tests of jetson/trtexec_parse.py on captured-style trtexec 8.2 / 10.3 and power logs."""
import ast
import csv
import glob
import json
import os
import py_compile
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "jetson"))
import trtexec_parse as tp  # noqa: E402

FIX = os.path.join(ROOT, "tests", "fixtures", "trtexec")
PARSER = os.path.join(ROOT, "jetson", "trtexec_parse.py")


def fix(name):
    return os.path.join(FIX, name)


def read(name):
    with open(fix(name)) as f:
        return f.read()


# ------------------------------------------------------------------ trtexec logs

def test_parse_trt82_run_log():
    info = tp.parse_trtexec_file(fix("trt8.2_nano_dense_fp16_run.log"))
    assert info["status"] == "PASSED"
    assert info["trt_version"] == "8.2.1" and info["trt_version_tag"] == "8.2.1"
    assert info["device"] == "NVIDIA Tegra X1" and info["compute_capability"] == "5.3"
    assert info["has_summary"]
    assert info["throughput_qps"] == pytest.approx(129.546)
    lat = info["metrics"]["latency"]
    assert (lat["min"], lat["max"], lat["mean"], lat["median"]) == pytest.approx((7.5813, 9.90747, 7.7366, 7.72021))
    assert lat["percentiles"] == {"99": pytest.approx(8.20313)}
    # 8.x prints End-to-End Host Latency; 10.x does not
    assert info["metrics"]["end_to_end"]["median"] == pytest.approx(7.72803)
    assert info["metrics"]["gpu_compute"]["median"] == pytest.approx(7.62915)
    assert info["metrics"]["d2h"]["min"] == pytest.approx(0.00683594)
    assert info["queries"] == 1297
    assert info["total_host_walltime_s"] == pytest.approx(10.0118)
    assert info["load_time_s"] == pytest.approx(5.81712)
    assert info["percentiles_option"] == "99"
    assert info["errors"] == []


def test_parse_trt103_run_log_has_several_percentiles_and_no_end_to_end():
    info = tp.parse_trtexec_file(fix("trt10.3_orin_sparse_fp16_run.log"))
    assert info["trt_version"] == "10.3.0" and info["trt_version_tag"] == "10.3.0"
    assert info["device"] == "Orin" and info["compute_capability"] == "8.7"
    assert set(info["metrics"]) == {"latency", "enqueue", "h2d", "gpu_compute", "d2h"}
    lat = info["metrics"]["latency"]
    assert lat["median"] == pytest.approx(0.946289)
    assert lat["percentiles"] == {"90": pytest.approx(0.986328), "95": pytest.approx(1.02148),
                                  "99": pytest.approx(1.1582)}
    assert info["throughput_qps"] == pytest.approx(1063.27)
    assert info["coeff_var_percent"] == pytest.approx(3.14512)
    assert info["cuda_graph"] == "Enabled"
    assert any("unstable" in w for w in info["warnings"])


def test_parse_build_only_log_reports_engine_size_and_no_summary():
    info = tp.parse_trtexec_file(fix("trt10.3_orin_build_sparse_fp16.log"))
    assert info["status"] == "PASSED"
    assert not info["has_summary"]
    assert info["build_time_s"] == pytest.approx(86.3954)
    assert info["engine_size_mib"] == pytest.approx(9.41797)


def test_parse_failed_build_log_collects_errors():
    info = tp.parse_trtexec_file(fix("trt8.2_build_plugin_not_found.log"))
    assert info["status"] == "FAILED"
    assert not info["has_summary"]
    assert "Failed to parse onnx file" in info["errors"]
    assert "Engine set up failed" in info["errors"]


@pytest.mark.parametrize("tag,version", [
    ("8201", "8.2.1"), ("8003", "8.0.3"), ("8600", "8.6.0"), ("8502", "8.5.2"), ("7103", "7.1.3"),
    ("100300", "10.3.0"), ("101600", "10.16.0"), ("110100", "11.1.0"),
])
def test_version_tag(tag, version):
    assert tp.parse_version_tag(tag) == version


def _summary(lines):
    body = "\n".join("[12/02/2026-10:15:19] [I] " + ln for ln in lines)
    return "[12/02/2026-10:15:19] [I] === Performance summary ===\n" + body + "\n"


def test_custom_percentiles_and_scientific_notation():
    text = _summary([
        "Throughput: 1.5e+03 qps",
        "Latency: min = 1e-05 ms, max = 2 ms, mean = 0.5 ms, median = 0.25 ms, "
        "percentile(50%) = 0.25 ms, percentile(99.9%) = 1.75 ms",
        "GPU Compute Time: min = 0.1 ms, max = 1.9 ms, mean = 0.45 ms, median = 0.2 ms, percentile(50%) = 0.2 ms, "
        "percentile(99.9%) = 1.7 ms",
    ])
    info = tp.parse_trtexec_log(text)
    assert info["throughput_qps"] == 1500.0
    assert info["metrics"]["latency"]["min"] == 1e-05
    assert info["metrics"]["latency"]["percentiles"] == {"50": 0.25, "99.9": 1.75}


def test_prefixless_and_crlf_logs_parse_the_same():
    text = read("trt8.2_nano_sparse_fp16_run.log")
    plain = "\n".join(tp._PREFIX_RE.sub("", ln) for ln in text.splitlines())
    crlf = text.replace("\n", "\r\n")
    ref = tp.parse_trtexec_log(text)
    for variant in (plain, crlf):
        got = tp.parse_trtexec_log(variant)
        assert got["metrics"] == ref["metrics"]
        assert got["throughput_qps"] == ref["throughput_qps"]


def test_last_summary_wins_and_explanations_are_not_metrics():
    text = read("trt8.2_nano_dense_fp16_run.log")
    verbose = ("[12/02/2026-10:15:19] [V] === Explanations of the performance metrics ===\n"
               "[12/02/2026-10:15:19] [V] GPU Compute Time: the GPU latency to execute the kernels for a query.\n"
               "[12/02/2026-10:15:19] [V] Latency: the summation of H2D Latency, GPU Compute Time, and D2H Latency.\n")
    info = tp.parse_trtexec_log(text.replace("&&&& PASSED", verbose + "&&&& PASSED"))
    assert info["metrics"]["latency"]["median"] == pytest.approx(7.72021)


def test_malformed_metric_line_names_source_and_line():
    text = _summary(["Throughput: 10 qps", "Latency: min = 1 ms, max = 2 ms, mean = 1.5 ms",
                     "GPU Compute Time: min = 1 ms, max = 2 ms, mean = 1.5 ms, median = 1.4 ms"])
    with pytest.raises(tp.TrtexecParseError, match=r"run\.log:3: Latency: cannot read median"):
        tp.parse_trtexec_log(text, source="run.log")


def test_summary_without_gpu_compute_line_is_an_error():
    text = _summary(["Throughput: 10 qps", "Latency: min = 1 ms, max = 2 ms, mean = 1.5 ms, median = 1.4 ms"])
    with pytest.raises(tp.TrtexecParseError, match="GPU Compute Time"):
        tp.parse_trtexec_log(text)


def test_truncated_log_has_no_summary():
    text = read("trt10.3_orin_dense_fp16_run.log")
    cut = text[:text.index("=== Performance summary ===")]
    info = tp.parse_trtexec_log(cut)
    assert not info["has_summary"] and info["status"] is None


# ------------------------------------------------------------------ power logs

def test_tegrastats_nano_uses_pom_5v_in_and_trims_idle_samples():
    text = read("tegrastats_nano_jp46.log")
    p = tp.parse_power_log(text, trim=0.1)
    assert p["kind"] == "tegrastats"
    assert p["total_rail"] == "POM_5V_IN" and p["gpu_rail"] == "POM_5V_GPU"
    assert set(p["rails"]) == {"POM_5V_IN", "POM_5V_GPU", "POM_5V_CPU"}  # not RAM/SWAP/IRAM
    assert p["samples"] == 32
    # the fixture's first and last 4 samples are idle (~2.1 W); the loaded ones 4.95-5.25 W
    assert 4950 <= p["total_mw"] <= 5250
    untrimmed = tp.parse_power_log(text, trim=0.0)
    assert untrimmed["samples"] == 40 and untrimmed["total_mw"] < p["total_mw"]
    # the mean is of the instantaneous values, not of tegrastats' running averages
    assert p["total_mw"] != pytest.approx(4876)


def test_tegrastats_orin_mw_suffix():
    p = tp.parse_power_log(read("tegrastats_orin_nano_jp6.log"))
    assert p["total_rail"] == "VDD_IN" and p["gpu_rail"] == "VDD_CPU_GPU_CV"
    assert 7700 <= p["total_mw"] <= 8000
    assert 2800 <= p["gpu_mw"] <= 2950


def test_nvidia_smi_power_samples_in_watts():
    text = read("nvidia_smi_power_a100.log")
    vals = [float(x) for x in text.split()]
    p = tp.parse_power_log(text, trim=0.0)
    assert p["kind"] == "nvidia-smi" and p["samples"] == len(vals)
    assert p["total_mw"] == pytest.approx(1000 * sum(vals) / len(vals))


def test_power_log_errors():
    with pytest.raises(tp.TrtexecParseError, match="no tegrastats"):
        tp.parse_power_log("hello\n", source="p.log")
    with pytest.raises(tp.TrtexecParseError, match="trim"):
        tp.parse_power_log(read("tegrastats_nano_jp46.log"), trim=0.5)


# ------------------------------------------------------------------ summary

def _scaled_log(src, dst, factor):
    """Copy a run log with every 'median = X ms' of the summary multiplied by factor."""
    import re

    text = read(src)

    def repl(m):
        return "median = {:g} ms".format(float(m.group(1)) * factor)

    with open(dst, "w") as f:
        f.write(re.sub(r"median = ([0-9.e+-]+) ms", repl, text))


def _manifest(tmp_path, rows, power=None):
    path = tmp_path / "runs.csv"
    with open(str(path), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(tp.MANIFEST_FIELDS)
        for r in rows:
            w.writerow(r)
    return str(path)


def test_summary_median_of_runs_and_speedups(tmp_path):
    (tmp_path / "logs").mkdir()
    # three dense runs whose medians are x1.0, x1.1, x0.9 and two sparse runs x1.0, x1.2
    for i, f in enumerate((1.0, 1.1, 0.9), 1):
        _scaled_log("trt8.2_nano_dense_fp16_run.log", str(tmp_path / "logs" / "d{}.log".format(i)), f)
    for i, f in enumerate((1.0, 1.2), 1):
        _scaled_log("trt8.2_nano_sparse_fp16_run.log", str(tmp_path / "logs" / "s{}.log".format(i)), f)
    shutil.copy(fix("tegrastats_nano_jp46.log"), str(tmp_path / "logs" / "p.log"))
    rows = [("resnet18", "dense", "fp16", "/e/d.engine", 25165824, i, "logs/d{}.log".format(i), "logs/p.log")
            for i in (1, 2, 3)]
    rows += [("resnet18", "sparse", "fp16", "/e/s.engine", 9437184, i, "logs/s{}.log".format(i), "")
             for i in (1, 2)]
    recs = tp.summarize(tp.read_manifest(_manifest(tmp_path, rows)))
    dense, sparse = recs
    assert (dense["variant"], sparse["variant"]) == ("dense", "sparse")
    assert dense["runs"] == 3 and sparse["runs"] == 2
    assert dense["latency_median_ms"] == pytest.approx(7.72021)              # median of x0.9, x1, x1.1
    assert dense["latency_run_min_ms"] == pytest.approx(0.9 * 7.72021, rel=1e-5)
    assert dense["latency_run_max_ms"] == pytest.approx(1.1 * 7.72021, rel=1e-5)
    assert sparse["latency_median_ms"] == pytest.approx(1.1 * 5.95361, rel=1e-5)  # median of two = mean
    assert sparse["speedup_latency"] == pytest.approx(7.72021 / (1.1 * 5.95361), rel=1e-5)
    assert sparse["speedup_gpu_compute"] == pytest.approx(7.62915 / (1.1 * 5.8623), rel=1e-5)
    assert sparse["speedup_throughput"] == pytest.approx(167.882 / 129.546, rel=1e-6)
    assert dense["speedup_latency"] == pytest.approx(1.0)
    assert dense["engine_mib"] == pytest.approx(24.0) and sparse["engine_mib"] == pytest.approx(9.0)
    assert sparse["engine_size_ratio"] == pytest.approx(9.0 / 24.0)
    assert dense["power_rail"] == "POM_5V_IN" and sparse["power_total_mw"] is None
    assert dense["energy_per_inference_mj"] == pytest.approx(dense["power_total_mw"] / 129.546)
    assert dense["latency_p99_ms"] == pytest.approx(8.20313)
    text = tp.format_text(recs)
    assert "TensorRT 8.2.1" in text and "NVIDIA Tegra X1" in text
    assert "{:.2f}".format(sparse["speedup_latency"]) in text


def test_summary_cli_writes_text_csv_json(tmp_path, capsys):
    rows = [("m", "dense", "fp16", "", "", 1, fix("trt10.3_orin_dense_fp16_run.log"), ""),
            ("m", "sparse", "fp16", "", "", 1, fix("trt10.3_orin_sparse_fp16_run.log"), "")]
    man = _manifest(tmp_path, rows)
    out_txt, out_csv, out_json = (str(tmp_path / n) for n in ("s.txt", "s.csv", "s.json"))
    assert tp.main(["summary", man, "--text", out_txt, "--csv", out_csv, "--json", out_json]) == 0
    with open(out_csv) as f:
        got = list(csv.DictReader(f))
    assert [r["variant"] for r in got] == ["dense", "sparse"]
    assert tuple(got[0].keys()) == tp.SUMMARY_FIELDS
    assert float(got[1]["speedup_gpu_compute"]) == pytest.approx(1.10693 / 0.908203, rel=1e-5)
    assert got[0]["engine_mib"] == ""  # no engine_bytes and a run log carries no engine size
    with open(out_json) as f:
        assert json.load(f)[1]["trt_version"] == "10.3.0"
    with open(out_txt) as f:
        assert f.read() == capsys.readouterr().out
    assert not glob.glob(str(tmp_path / ".tmp-*"))


def test_summary_rejects_failed_run(tmp_path, capsys):
    rows = [("m", "sparse", "fp16", "", "", 1, fix("trt8.2_build_plugin_not_found.log"), "")]
    man = _manifest(tmp_path, rows)
    assert tp.main(["summary", man]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0
    assert "trt8.2_build_plugin_not_found.log" in err and "Engine set up failed" in err


@pytest.mark.parametrize("rows,message", [
    ([], "no runs"),
    ([("m", "medium", "fp16", "", "", 1, "x.log", "")], "variant must be dense or sparse"),
])
def test_manifest_errors(tmp_path, rows, message):
    with pytest.raises(tp.TrtexecParseError, match=message):
        tp.read_manifest(_manifest(tmp_path, rows))


def test_manifest_missing_column(tmp_path):
    path = tmp_path / "runs.csv"
    path.write_text("model,variant\nm,dense\n")
    with pytest.raises(tp.TrtexecParseError, match="lacks column"):
        tp.read_manifest(str(path))


def test_cli_missing_file_is_one_line_error(capsys):
    assert tp.main(["parse", "/nonexistent/run.log"]) == 2
    err = capsys.readouterr().err
    assert "cannot read /nonexistent/run.log" in err and err.count("\n") == 1


# ------------------------------------------------------------------ Python 3.6 (JetPack 4.6)

def test_parser_is_python36_syntax(tmp_path):
    with open(PARSER) as f:
        src = f.read()
    ast.parse(src, filename=PARSER, feature_version=(3, 6))
    py_compile.compile(PARSER, doraise=True, cfile=str(tmp_path / "trtexec_parse.pyc"))
    assert "from __future__ import annotations" not in src and "dataclasses" not in src


def _find_python36():
    for cand in [shutil.which("python3.6")] + sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.6*/bin/python3.6"))):
        if not cand:
            continue
        try:
            out = subprocess.check_output([cand, "-c", "import sys; print(sys.version_info[:2])"],
                                          stderr=subprocess.DEVNULL, universal_newlines=True)
        except (OSError, subprocess.CalledProcessError):
            continue
        if out.strip() == "(3, 6)":
            return cand
    return None


def test_parser_runs_under_python36(tmp_path):
    py36 = _find_python36()
    if py36 is None:
        pytest.skip("no Python 3.6 interpreter here (pyenv install 3.6 to run this check)")
    rows = [("m", "dense", "fp16", "", "100", 1, fix("trt8.2_nano_dense_fp16_run.log"), fix("tegrastats_nano_jp46.log")),
            ("m", "sparse", "fp16", "", "50", 1, fix("trt8.2_nano_sparse_fp16_run.log"), "")]
    man = _manifest(tmp_path, rows)
    res = subprocess.run([py36, PARSER, "summary", man, "--json", str(tmp_path / "s36.json")],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    assert res.returncode == 0, res.stderr
    assert tp.main(["summary", man, "--json", str(tmp_path / "s311.json")]) == 0
    with open(str(tmp_path / "s36.json")) as a, open(str(tmp_path / "s311.json")) as b:
        assert json.load(a) == json.load(b)
    one = subprocess.run([py36, PARSER, "parse", fix("trt10.3_orin_dense_fp16_run.log")],
                         stdout=subprocess.PIPE, universal_newlines=True)
    assert one.returncode == 0
    assert json.loads(one.stdout) == tp.parse_trtexec_file(fix("trt10.3_orin_dense_fp16_run.log"))
    # the output-check helpers too: same input bytes as 3.11, and compare's exit codes
    (tmp_path / "in36").mkdir()
    (tmp_path / "in311").mkdir()
    mk = subprocess.run([py36, PARSER, "make-inputs", fix("trt8.2_nano_dense_fp16_run.log"), "--out-dir",
                         str(tmp_path / "in36")], stdout=subprocess.PIPE, universal_newlines=True)
    assert mk.returncode == 0
    spec311 = tp.make_inputs(tp.parse_trtexec_file(fix("trt8.2_nano_dense_fp16_run.log")), str(tmp_path / "in311"))
    with open(mk.stdout.strip().split(":", 1)[1], "rb") as a, open(spec311.split(":", 1)[1], "rb") as b:
        assert a.read() == b.read()
    d = _export(tmp_path / "d.json", ["3", "1"])
    s = _export(tmp_path / "s.json", ["1", "3"])
    assert subprocess.run([py36, PARSER, "compare", d, d], stdout=subprocess.PIPE).returncode == 0
    assert subprocess.run([py36, PARSER, "compare", d, s], stdout=subprocess.PIPE).returncode == 4


def test_unreadable_power_log_is_a_warning_not_an_error(tmp_path, capsys):
    empty = tmp_path / "empty.power.log"
    empty.write_text("")
    rows = [("m", "dense", "fp16", "", "", 1, fix("trt8.2_nano_dense_fp16_run.log"), str(empty))]
    recs = tp.summarize(tp.read_manifest(_manifest(tmp_path, rows)))
    assert recs[0]["latency_median_ms"] == pytest.approx(7.72021)
    assert recs[0]["power_total_mw"] is None and recs[0].get("energy_per_inference_mj") is None
    assert "warning: power ignored" in capsys.readouterr().err


# ------------------------------------------------------------------ output check helpers

def test_make_inputs_writes_seeded_float32_files(tmp_path):
    import array

    info = tp.parse_trtexec_file(fix("trt10.3_orin_dense_fp16_run.log"))
    assert info["inputs"] == [["input", "1x3x224x224"]] and info["outputs"] == [["output", "1x1000"]]
    spec = tp.make_inputs(info, str(tmp_path), seed=3)
    name, path = spec.split(":", 1)
    assert name == "input" and os.path.getsize(path) == 4 * 3 * 224 * 224
    a = array.array("f")
    with open(path, "rb") as f:
        a.fromfile(f, 3 * 224 * 224)
    assert -1.0 <= min(a) < -0.99 and 0.99 < max(a) < 1.0
    again = tmp_path / "again"
    again.mkdir()
    with open(tp.make_inputs(info, str(again), seed=3).split(":", 1)[1], "rb") as f1, open(path, "rb") as f2:
        assert f1.read() == f2.read()


def test_make_inputs_rejects_dynamic_dims(tmp_path):
    info = {"source": "x.log", "inputs": [["input", "-1x3x224x224"]]}
    with pytest.raises(tp.TrtexecParseError, match="not static"):
        tp.make_inputs(info, str(tmp_path))


def _export(path, values, name="output"):
    with open(str(path), "w") as f:
        f.write('[\n  { "name" : "%s"\n  , "dimensions" : "1x%d"\n  , "values" : [ %s ]\n  }\n]\n'
                % (name, len(values), ", ".join(values)))
    return str(path)


def test_compare_outputs(tmp_path):
    d = _export(tmp_path / "d.json", ["1", "-4", "2", "0.5"])
    s = _export(tmp_path / "s.json", ["1.01", "-4", "2", "0.5"])
    (row,) = tp.compare_outputs(tp.read_output_export(d), tp.read_output_export(s), tol=1e-3)
    assert row["max_abs_diff"] == pytest.approx(0.01) and row["ref_max_abs"] == 4.0
    assert row["rel_err"] == pytest.approx(0.0025) and row["argmax_equal"] and not row["ok"]
    (row,) = tp.compare_outputs(tp.read_output_export(d), tp.read_output_export(s), tol=3e-3)
    assert row["ok"]
    bad = _export(tmp_path / "n.json", ["1", "-4", "nan", "inf"])
    (row,) = tp.compare_outputs(tp.read_output_export(d), tp.read_output_export(bad), tol=1.0)
    assert not row["ok"] and row["max_abs_diff"] == float("inf")
    other = _export(tmp_path / "o.json", ["1", "2"], name="logits")
    with pytest.raises(tp.TrtexecParseError, match="missing from the sparse"):
        tp.compare_outputs(tp.read_output_export(d), tp.read_output_export(other), tol=1.0)


def test_compare_cli_exit_codes(tmp_path, capsys):
    d = _export(tmp_path / "d.json", ["3", "1"])
    s = _export(tmp_path / "s.json", ["1", "3"])
    assert tp.main(["compare", d, d, "--label", "m fp32 "]) == 0
    assert tp.main(["compare", d, s]) == 4
    out = capsys.readouterr().out
    assert "m fp32 output: 2 values" in out and "top-1 DIFFERENT: MISMATCH" in out
    (tmp_path / "junk.json").write_text("not json")
    assert tp.main(["compare", d, str(tmp_path / "junk.json")]) == 2


def test_trt85_jetpack51_log_uses_the_10x_layout():
    # TensorRT 8.5/8.6 (JetPack 5.1 / 6.0) already print the 10.x summary: a percentile list,
    # no End-to-End line (sampleReporting.cpp of release/8.5 and release/8.6)
    text = read("trt10.3_orin_dense_fp16_run.log").replace("[TensorRT v100300]", "[TensorRT v8502]")
    text = text.replace("TensorRT version: 10.3.0", "TensorRT version: 8.5.2")
    info = tp.parse_trtexec_log(text)
    assert info["trt_version"] == "8.5.2" and info["trt_version_tag"] == "8.5.2"
    assert "end_to_end" not in info["metrics"]
    assert sorted(info["metrics"]["latency"]["percentiles"]) == ["90", "95", "99"]
