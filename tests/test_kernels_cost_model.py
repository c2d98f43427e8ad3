"""Cost model of the sparse kernels: shape of predictions and the fit procedure."""
import json
import math

import numpy as np
import pytest

from trt_sparse import cost_model
from trt_sparse.errors import UnsupportedError

LAYER = dict(C=64, K=64, R=3, S=3, H=56, W=56, stride_h=1, stride_w=1, pads=(1, 1, 1, 1),
             dilation_h=1, dilation_w=1)


def _nnz(layer, sparsity):
    return int(round(layer["K"] * layer["C"] * layer["R"] * layer["S"] * (1 - sparsity)))


@pytest.mark.parametrize("dtype", ["fp32", "fp16"])
@pytest.mark.parametrize("batch", [1, 8])
def test_speedup_grows_with_sparsity(dtype, batch):
    vals = [cost_model.predict_speedup(LAYER, _nnz(LAYER, s), batch, dtype) for s in (0.5, 0.8, 0.9, 0.95, 0.99)]
    assert all(math.isfinite(v) and v > 0 for v in vals)
    assert all(b > a for a, b in zip(vals, vals[1:]))


def test_measured_regime_is_reproduced():
    """At 90% the H200 measurements lose to TF32 cuDNN on this layer; the model must say so (keep dense)."""
    assert cost_model.predict_speedup(LAYER, _nnz(LAYER, 0.9), 1, "fp32") < 1.0
    assert cost_model.predict_speedup(LAYER, _nnz(LAYER, 0.995), 1, "fp32") > 1.0


def test_generic_geometry_is_penalized():
    """Dilated (generic-kernel) geometry: same work, sparse time x GENERIC_PENALTY."""
    dil = dict(LAYER, dilation_h=2, dilation_w=2, pads=(2, 2, 2, 2))
    a, _ = cost_model.predict_times(dil, _nnz(dil, 0.95), 1, "fp32")
    b, _ = cost_model.predict_times(LAYER, _nnz(LAYER, 0.95), 1, "fp32")
    assert a == pytest.approx(b * cost_model.GENERIC_PENALTY, rel=1e-9)


def test_bad_inputs():
    with pytest.raises(UnsupportedError):
        cost_model.predict_speedup(LAYER, 100, 1, "int8")
    with pytest.raises(UnsupportedError):
        cost_model.predict_speedup(dict(LAYER, H=1, W=1, pads=(0, 0, 0, 0)), 100, 1, "fp32")


def test_fit_recovers_synthetic_coefficients(tmp_path):
    """Times generated from known coefficients are fitted back (the fit really fits)."""
    true = {"sparse": [0.5, 0.6, 0.1, 0.2, -0.15], "dense": [0.3, 0.45, -0.1]}
    rng = np.random.default_rng(1)
    results = []
    for _ in range(60):
        c, k = int(rng.choice([32, 64, 128, 256])), int(rng.choice([32, 64, 256]))
        h = int(rng.choice([7, 14, 28, 56]))
        kern = int(rng.choice([1, 3]))
        sp = float(rng.uniform(0.5, 0.99))
        b = int(rng.choice([1, 8]))
        lay = {"name": "x", "C": c, "K": k, "H": h, "W": h, "kernel": kern, "stride": 1, "pad": kern // 2,
               "dilation": 1}
        geo = cost_model._layer_of_result({"layer": lay})
        nnz = max(1, int(c * k * kern * kern * (1 - sp)))
        ts, td = cost_model.predict_times(geo, nnz, b, "fp32", coeffs={"fp32": true})
        results.append({"layer": lay, "batch": b, "dtype": "fp32", "nnz": nnz, "sparsity": sp,
                        "sparse_us": ts, "dense_us": {"tf32_best": td}})
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"results": results}))
    coeffs, errors = cost_model.fit(json.loads(path.read_text())["results"])
    assert np.allclose(coeffs["fp32"]["sparse"], true["sparse"], atol=1e-3)
    assert np.allclose(coeffs["fp32"]["dense"], true["dense"], atol=1e-3)
    assert errors["fp32"]["median_abs_log_err"] < 1e-3


def test_fit_cli_max_sparsity(tmp_path, capsys):
    """The refit CLI leaves out cases above --max-sparsity (launch-bound near-empty layers)."""
    true = {"sparse": [0.5, 0.6, 0.1, 0.2, -0.15], "dense": [0.3, 0.45, -0.1]}
    rng = np.random.default_rng(2)
    results = []
    for i in range(40):
        c, k, h = int(rng.choice([32, 64, 128])), int(rng.choice([32, 64, 256])), int(rng.choice([14, 28, 56]))
        sp = 0.999 if i < 5 else float(rng.uniform(0.5, 0.98))
        lay = {"name": "x", "C": c, "K": k, "H": h, "W": h, "kernel": 3, "stride": 1, "pad": 1, "dilation": 1}
        geo = cost_model._layer_of_result({"layer": lay})
        nnz = max(1, int(c * k * 9 * (1 - sp)))
        ts, td = cost_model.predict_times(geo, nnz, 1, "fp32", coeffs={"fp32": true})
        if sp > 0.99:
            ts *= 50.0  # off-model outliers
        results.append({"layer": lay, "batch": 1, "dtype": "fp32", "nnz": nnz, "sparsity": sp,
                        "sparse_us": ts, "dense_us": {"tf32_best": td}})
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"results": results}))
    assert cost_model.main(["--max-sparsity", "0.99", str(path)]) == 0
    out = capsys.readouterr().out
    fitted = json.loads(out.split("COEFFS = ", 1)[1].split("fit errors:", 1)[0])
    assert np.allclose(fitted["fp32"]["sparse"], true["sparse"], atol=1e-3)
    assert cost_model.main(["--max-sparsity", "1.0", str(path)]) == 0
    fitted_all = json.loads(capsys.readouterr().out.split("COEFFS = ", 1)[1].split("fit errors:", 1)[0])
    assert not np.allclose(fitted_all["fp32"]["sparse"], true["sparse"], atol=1e-2)


def test_union_fraction():
    """Expected share of a 16-channel group's positions in use: random masks vs vector:V patterns."""
    assert cost_model.union_fraction(0.0) == 0.0 and cost_model.union_fraction(1.0) == 1.0
    assert cost_model.union_fraction(0.1) == pytest.approx(1 - 0.9 ** 16)
    assert cost_model.union_fraction(0.1, vector=16) == pytest.approx(0.1)
    assert cost_model.union_fraction(0.1, vector=8) == pytest.approx(1 - 0.9 ** 2)


def test_fp16_prediction_follows_the_measured_union():
    """fp16: the same nnz packed into shared positions (vector-pruned) predicts less sparse time."""
    nnz = _nnz(LAYER, 0.9)
    t_random, _ = cost_model.predict_times(LAYER, nnz, 1, "fp16")
    density = nnz / (LAYER["K"] * LAYER["C"] * 9.0)
    t_default, _ = cost_model.predict_times(dict(LAYER, union16=cost_model.union_fraction(density)), nnz, 1, "fp16")
    t_vector, _ = cost_model.predict_times(dict(LAYER, union16=0.1), nnz, 1, "fp16")
    assert t_default == pytest.approx(t_random, rel=1e-9)  # no union16: the uniform-random estimate
    assert t_vector < 0.5 * t_random
    # fp32 has no union term: union16 changes nothing
    a, _ = cost_model.predict_times(dict(LAYER, union16=0.1), nnz, 1, "fp32")
    b, _ = cost_model.predict_times(LAYER, nnz, 1, "fp32")
    assert a == b


def test_fit_recovers_the_union_term():
    """fp16 cases generated with a union term (random and vector:16 masks) are fitted back."""
    true = {"sparse": [0.4, 0.0, 0.2, 0.0, -0.2, 0.5], "dense": [0.3, 0.45, -0.1]}  # s1 = s3 = 0 (fit holds them)
    rng = np.random.default_rng(3)
    results = []
    for i in range(80):
        c, k, h = int(rng.choice([32, 64, 128, 256])), int(rng.choice([32, 64, 256])), int(rng.choice([7, 14, 56]))
        sp, b = float(rng.uniform(0.5, 0.99)), int(rng.choice([1, 8]))
        pattern = "vector:16" if i % 3 == 0 else "unstructured"
        lay = {"name": "x", "C": c, "K": k, "H": h, "W": h, "kernel": 3, "stride": 1, "pad": 1, "dilation": 1}
        geo = cost_model._layer_of_result({"layer": lay})
        nnz = max(1, int(c * k * 9 * (1 - sp)))
        geo["union16"] = cost_model.union_fraction(nnz / (c * k * 9.0), 16 if pattern != "unstructured" else 1)
        ts, td = cost_model.predict_times(geo, nnz, b, "fp16", coeffs={"fp16": true})
        results.append({"layer": lay, "batch": b, "dtype": "fp16", "nnz": nnz, "sparsity": sp, "pattern": pattern,
                        "sparse_us": ts, "dense_us": {"fp16_best": td}})
    coeffs, errors = cost_model.fit(results)
    assert np.allclose(coeffs["fp16"]["sparse"], true["sparse"], atol=1e-3)
    assert errors["fp16"]["median_abs_log_err"] < 1e-3


def _exact_fp32_results(true, cases):
    """bench-kernels result dicts (fp32, batch 1, 3x3 pad 1, K = C) whose times are exactly what the coefficients
    `true` predict, one per (C, H, sparsity) of `cases`."""
    results = []
    for c, h, sp in cases:
        lay = {"name": "x", "C": c, "K": c, "H": h, "W": h, "kernel": 3, "stride": 1, "pad": 1, "dilation": 1}
        nnz = int(c * c * 9 * (1 - sp))
        ts, td = cost_model.predict_times(cost_model._layer_of_result({"layer": lay}), nnz, 1, "fp32",
                                          coeffs={"fp32": true})
        results.append({"layer": lay, "batch": 1, "dtype": "fp32", "nnz": nnz, "sparsity": sp,
                        "sparse_us": ts, "dense_us": {"tf32_best": td}})
    return results


def test_evaluate_scores_coefficients_on_held_out_results(tmp_path, capsys):
    """evaluate / --evaluate: exact coefficients score ~0 error; results 2x off score log 2, on the wrong side."""
    true = {"sparse": [0.5, 0.6, 0.1, 0.2, -0.15], "dense": [0.3, 0.45, -0.1]}
    results = _exact_fp32_results(true, [(32, 14, 0.6), (64, 28, 0.8), (128, 56, 0.9), (256, 7, 0.95)])
    exact = cost_model.evaluate(results, {"fp32": true})["fp32"]
    assert exact["cases"] == 4 and exact["median_abs_log_err"] < 1e-9
    off = [dict(r, sparse_us=r["sparse_us"] * 2.0) for r in results]
    err = cost_model.evaluate(off, {"fp32": true})["fp32"]
    assert err["median_abs_log_err"] == pytest.approx(math.log(2.0))
    pred = [td / ts for ts, td in (cost_model.predict_times(cost_model._layer_of_result(r), r["nnz"], 1, "fp32",
                                                            coeffs={"fp32": true}) for r in results)]
    assert err["wrong_side_of_1"] == sum(1 for p in pred if p > 1 > p / 2.0)
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"results": results}))
    assert cost_model.main(["--evaluate", str(path)]) == 0  # the shipped COEFFS, printed not fitted
    out = capsys.readouterr().out
    assert "errors of the current COEFFS" in out and "COEFFS = " not in out


def test_decision_study_counts_what_the_margin_converts(tmp_path, capsys):
    """decision_study / --margins: with exact coefficients, margin 1 converts exactly the measured wins (none slower,
    geomean = oracle); when sparse is measured 2x slower than predicted, the same margin converts cases that lose,
    and a margin above every prediction converts none (geomean 1)."""
    true = {"sparse": [0.5, 0.6, 0.1, 0.2, -0.15], "dense": [-0.6, 0.45, -0.1]}
    results = _exact_fp32_results(true, [(32, 14, 0.6), (64, 28, 0.8), (128, 56, 0.9), (256, 7, 0.95),
                                         (512, 7, 0.99)])
    measured = [r["dense_us"]["tf32_best"] / r["sparse_us"] for r in results]
    wins = [m for m in measured if m > 1]
    assert 0 < len(wins) < len(results)  # the synthetic cases straddle 1x
    top = max(measured)
    exact = cost_model.decision_study(results, [1.0, top * 1.01], {"fp32": true})
    assert exact[1.0]["converted"] == len(wins) and exact[1.0]["slower"] == 0
    assert exact[1.0]["geomean"] == pytest.approx(exact[1.0]["oracle"])
    assert exact[1.0]["oracle"] == pytest.approx(math.exp(sum(math.log(m) for m in wins) / len(results)))
    assert exact[top * 1.01]["converted"] == 0 and exact[top * 1.01]["geomean"] == 1.0
    off = [dict(r, sparse_us=r["sparse_us"] * 2.0) for r in results]
    lost = cost_model.decision_study(off, [1.0], {"fp32": true})[1.0]
    assert lost["converted"] == len(wins)
    assert lost["slower"] == sum(1 for m in wins if m / 2.0 < 1) and lost["worst"] == pytest.approx(min(wins) / 2.0)
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"results": results}))
    assert cost_model.main(["--evaluate", str(path), "--margins", "1.0", "1.25"]) == 0
    out = capsys.readouterr().out
    assert "decisions of the current COEFFS per --model-margin" in out and '"1.25"' in out
    with pytest.raises(SystemExit):
        cost_model.main([str(path), "--margins", "1.0"])  # --margins only with --evaluate
