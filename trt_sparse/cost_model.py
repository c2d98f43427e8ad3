"""Cost model of the sparse kernels vs dense cuDNN, fitted to ``trt-sparse bench-kernels`` results.

``predict_speedup(layer, nnz, batch, dtype)`` returns predicted dense_time /
sparse_time against the best dense baseline of that dtype (fp32: cuDNN with TF32
allowed, the torch/TensorRT default; fp16: cuDNN fp16), so > 1 means the sparse
kernel should win. ``trt-sparse convert --policy model`` keeps a layer dense when
it is <= 1.

Both times are log-linear in the work of the layer (fitted per dtype by least
squares on log time, see :func:`fit`):

    log t_sparse = s0 + s1 log(useful MFMA) + s2 log(I/O MB) + s3 log(nnz per output channel)
                   + s4 log(P*Q)      (output map area; s4 = 0 when COEFFS has 4 sparse terms)
                   + s5 log(union MFMA) (fp16 only: dense MFMA x the fraction of each 16-output-channel
                                         group's positions used by any of its channels, the work of the
                                         tensor-core variant; measured from the weights by convert
                                         (layer["union16"]), else 1 - (1 - density)^16)
    log t_dense  = d0 + d1 log(dense MFMA)  + d2 log(I/O MB)

useful MFMA = nnz * P * Q * N / 1e6, dense MFMA = K*C*R*S * P * Q * N / 1e6,
I/O MB = (N*C*H*W + N*K*P*Q) * bytes / 1e6. Geometries outside the kernels'
fast path (R x S not 1x1 / 3x3, stride > 2, unequal strides, dilation > 1) run the
generic kernel, which the benchmark does not sweep: their sparse time is
multiplied by GENERIC_PENALTY (a stated assumption, not a fit). Refit with
``python3 -m trt_sparse.cost_model bench/results/FILE.json`` and paste the
printed COEFFS. docs/PERFORMANCE.md documents the fit and its error.
"""
import json
import math
import sys

import numpy as np

from .errors import UnsupportedError
from .reference import conv_output_size

#: fitted coefficients per dtype: (sparse [s0..s3], dense [d0..d2]); see docs/PERFORMANCE.md
COEFFS = {
    "fp32": {"sparse": [2.9173, 0.4379, 0.26, 0.0254, -0.2406], "dense": [0.0048, 0.4632, -0.1178]},
    "fp16": {"sparse": [2.0438, 0.0, 0.2914, 0.0, -0.2261, 0.3951], "dense": [-0.7357, 0.503, -0.1918]},
}
#: source of COEFFS (results files the fits came from, sparsity <= 0.99)
FIT_SOURCE = ("fp32: bench/results/h200_round9_full.json + bench/results/h200_round9_sweep.json (H200, cuDNN 9.19, "
              "torch 2.11; round-9 kernels, the fp32 ones unchanged since: 0.99-1.01x of round 9 in rounds 10-12); "
              "fp16: bench/results/h200_round14_full.json + bench/results/h200_round14_sweep.json (round-14 "
              "tensor-core kernels: bank-aware k-step order, paired stores, cluster-2 / cluster-8 configs; 128 cases, "
              "23 layers x batch 1 / 8 x 90 / 95% + 9 layers x batch 1 x 50-98%)")
#: the dense time each dtype's speedup is measured against (bench-kernels `dense_us` key)
DENSE_BASELINE = {"fp32": "tf32_best", "fp16": "fp16_best"}
#: assumed slowdown of the generic kernel vs the register-tile kernel (not measured by the sweep)
GENERIC_PENALTY = 3.0

_DTYPE_ALIASES = {"fp32": "fp32", "float32": "fp32", "float": "fp32", "fp16": "fp16", "float16": "fp16",
                  "half": "fp16"}


#: output channels of one tensor-core group (the mma variant computes the union of their positions)
TC_GROUP = 16


def union_fraction(density, vector=1):
    """Expected fraction of a 16-channel group's (c, r, s) positions used by any of its channels, for
    uniform random masks of this density (vector > 1: `prune --pattern vector:V`, V channels share a mask)."""
    density = min(max(float(density), 0.0), 1.0)
    return 1.0 - (1.0 - density) ** max(1, TC_GROUP // max(1, int(vector)))


def measured_union_fraction(weight):
    """Mean fraction of (c, r, s) positions used by any channel of each group of TC_GROUP consecutive output
    channels: the work of the kernels' tensor-core variant relative to dense (layer["union16"])."""
    k = weight.shape[0]
    mask = np.asarray(weight).reshape(k, -1) != 0
    if k == 0 or mask.shape[1] == 0:
        return 0.0
    return float(np.mean([mask[g:g + TC_GROUP].any(axis=0).mean() for g in range(0, k, TC_GROUP)]))


def _union(layer, nnz):
    """Union fraction of the layer: measured (layer["union16"], set by convert) or the uniform-random estimate."""
    if layer.get("union16") is not None:
        return max(float(layer["union16"]), 1e-6)
    total = float(int(layer["K"]) * int(layer["C"]) * int(layer["R"]) * int(layer["S"]))
    return max(union_fraction(float(nnz) / total if total else 0.0), 1e-6)


def _features(layer, nnz, batch, dtype):
    C, K, R, S = (int(layer[k]) for k in ("C", "K", "R", "S"))
    H, W = int(layer["H"]), int(layer["W"])
    strides = (int(layer.get("stride_h", 1)), int(layer.get("stride_w", 1)))
    dils = (int(layer.get("dilation_h", 1)), int(layer.get("dilation_w", 1)))
    pads = tuple(int(p) for p in layer.get("pads", (0, 0, 0, 0)))
    P, Q = conv_output_size(H, W, R, S, strides, pads, dils)
    N = int(batch)
    esz = 2 if dtype == "fp16" else 4
    useful = max(float(nnz), 1.0) * P * Q * N / 1e6
    dense = float(K * C * R * S) * P * Q * N / 1e6
    io = (N * C * H * W + N * K * P * Q) * esz / 1e6
    per_k = max(float(nnz) / K, 1.0)
    pq = float(P * Q)
    fast = (R, S) in ((1, 1), (3, 3)) and strides[0] == strides[1] and strides[0] <= 2 and dils == (1, 1)
    return useful, dense, io, per_k, fast, pq


def _norm_dtype(dtype):
    d = _DTYPE_ALIASES.get(str(dtype).lower())
    if d is None:
        raise UnsupportedError("cost model: unknown dtype {!r} (fp32 or fp16)".format(dtype))
    return d


def predict_times(layer, nnz, batch=1, dtype="fp32", coeffs=None):
    """(sparse_us, dense_us) predicted for one layer (dict with C, K, R, S, H, W, strides, pads, dilations)."""
    dtype = _norm_dtype(dtype)
    co = (coeffs or COEFFS)[dtype]
    useful, dense, io, per_k, fast, pq = _features(layer, nnz, batch, dtype)
    s = co["sparse"]
    d = co["dense"]
    s4 = s[4] if len(s) > 4 else 0.0
    log_t = s[0] + s[1] * math.log(useful) + s[2] * math.log(max(io, 1e-6)) + s[3] * math.log(per_k) + s4 * math.log(pq)
    if len(s) > 5:  # tensor-core work: the union of each 16-channel group's positions (fp16 mma variant)
        log_t += s[5] * math.log(max(dense * _union(layer, nnz), 1e-6))
    t_sparse = math.exp(log_t)
    t_dense = math.exp(d[0] + d[1] * math.log(max(dense, 1e-6)) + d[2] * math.log(max(io, 1e-6)))
    if not fast:
        t_sparse *= GENERIC_PENALTY
    return t_sparse, t_dense


def predict_speedup(layer, nnz, batch, dtype):
    """Predicted dense_time / sparse_time vs the best dense baseline of `dtype` (> 1: sparse wins)."""
    t_sparse, t_dense = predict_times(layer, nnz, batch, dtype)
    return t_dense / t_sparse


def _layer_of_result(r):
    lay = r["layer"]
    k = int(lay["kernel"])
    st = int(lay.get("stride", 1))
    dl = int(lay.get("dilation", 1))
    pd = int(lay.get("pad", 0))
    return {"C": lay["C"], "K": lay["K"], "R": k, "S": k, "H": lay["H"], "W": lay["W"], "stride_h": st,
            "stride_w": st, "pads": (pd, pd, pd, pd), "dilation_h": dl, "dilation_w": dl}


#: dtypes whose sparse time gets the tensor-core union term s5 (fp16: the mma variant is tuned in most
#: cases; fp32 runs CUDA-core kernels unless TF32 is allowed, and the term did not help its fit)
UNION_TERM_DTYPES = ("fp16",)
#: terms fitted where the union term is used: s0, s2 (I/O), s4 (map area), s5 (union work); s1 (useful
#: MFMA) and s3 (nnz per channel) are held at 0: with the union term free they come out negative (more
#: sparsity -> more time, collinear with the union), which the round-6 data does not support
UNION_TERM_COLUMNS = [0, 2, 4, 5]


def _result_union(r, layer):
    """Union fraction of a bench-kernels case: uniform random masks, `vector:V` patterns share V channels."""
    pattern = str(r.get("pattern", "unstructured"))
    vector = int(pattern.split(":", 1)[1]) if pattern.startswith("vector:") else 1
    total = float(layer["K"] * layer["C"] * layer["R"] * layer["S"])
    return max(union_fraction(r["nnz"] / total, vector), 1e-6)


def fit(results):
    """Least-squares fit of COEFFS (log time) from bench-kernels result dicts; returns (coeffs, errors)."""
    coeffs, errors = {}, {}
    for dtype in ("fp32", "fp16"):
        rows = [r for r in results if _norm_dtype(r["dtype"]) == dtype and r.get("dense_us")]
        if len(rows) < 4:
            continue
        base = DENSE_BASELINE[dtype]
        xs, ys, xd, yd = [], [], [], []
        for r in rows:
            layer = _layer_of_result(r)
            useful, dense, io, per_k, _, pq = _features(layer, r["nnz"], r["batch"], dtype)
            row = [1.0, math.log(useful), math.log(io), math.log(per_k), math.log(pq)]
            if dtype in UNION_TERM_DTYPES:
                layer["union16"] = _result_union(r, layer)
                row.append(math.log(max(dense * layer["union16"], 1e-6)))
            xs.append(row)
            ys.append(math.log(r["sparse_us"]))
            if base in r["dense_us"]:
                xd.append([1.0, math.log(dense), math.log(io)])
                yd.append(math.log(r["dense_us"][base]))
        cols = UNION_TERM_COLUMNS if dtype in UNION_TERM_DTYPES else list(range(len(xs[0])))
        s = np.zeros(len(xs[0]))
        s[cols] = np.linalg.lstsq(np.array(xs)[:, cols], np.array(ys), rcond=None)[0]
        d = np.linalg.lstsq(np.array(xd), np.array(yd), rcond=None)[0]
        coeffs[dtype] = {"sparse": [round(float(v), 4) for v in s], "dense": [round(float(v), 4) for v in d]}
    return coeffs, evaluate(results, coeffs)


def _predicted_and_measured(results, dtype, coeffs):
    """(predicted, measured) speedups vs the dtype's dense baseline for the result dicts of `dtype` that have one
    (fp16 cases get their pattern's union fraction, as convert measures it from the weights)."""
    base = DENSE_BASELINE[dtype]
    pairs = []
    for r in results:
        if _norm_dtype(r["dtype"]) != dtype or base not in (r.get("dense_us") or {}):
            continue
        layer = _layer_of_result(r)
        if dtype in UNION_TERM_DTYPES:
            layer["union16"] = _result_union(r, layer)
        t_sparse, t_dense = predict_times(layer, r["nnz"], r["batch"], dtype, coeffs)
        pairs.append((t_dense / t_sparse, r["dense_us"][base] / r["sparse_us"]))
    return pairs


def evaluate(results, coeffs=None):
    """Per dtype: how well `coeffs` (default COEFFS) predict the measured speedups of bench-kernels result dicts
    (median / max abs log error, cases on the wrong side of 1x)."""
    coeffs = coeffs or COEFFS
    errors = {}
    for dtype in ("fp32", "fp16"):
        pairs = _predicted_and_measured(results, dtype, coeffs) if dtype in coeffs else []
        if not pairs:
            continue
        err = [abs(math.log(p / m)) for p, m in pairs]
        errors[dtype] = {"cases": len(pairs), "median_abs_log_err": float(np.median(err)),
                         "max_abs_log_err": float(max(err)),
                         "wrong_side_of_1": sum(1 for p, m in pairs if (p > 1) != (m > 1))}
    return errors


def decision_study(results, margins, coeffs=None):
    """What `convert --policy model --model-margin M` would do on measured cases, per margin M: a case is converted
    when its predicted speedup exceeds M. Returns {M: {cases, converted, slower (converted but measured < 1x),
    worst (lowest measured speedup among the converted), geomean (measured speedup of the per-case choices vs
    all-dense), oracle (the same with every case decided by its measurement)}} over both dtypes."""
    coeffs = coeffs or COEFFS
    pairs = [pm for dtype in ("fp32", "fp16") if dtype in coeffs
             for pm in _predicted_and_measured(results, dtype, coeffs)]
    if not pairs:
        return {}
    oracle = math.exp(sum(max(math.log(m), 0.0) for _, m in pairs) / len(pairs))
    study = {}
    for margin in margins:
        chosen = [m for p, m in pairs if p > margin]
        study[margin] = {"cases": len(pairs), "converted": len(chosen), "slower": sum(1 for m in chosen if m < 1),
                         "worst": min(chosen) if chosen else None,
                         "geomean": math.exp(sum(math.log(m) for m in chosen) / len(pairs)), "oracle": oracle}
    return study


def main(argv=None):
    """Print COEFFS fitted to bench-kernels JSON files (python3 -m trt_sparse.cost_model [--max-sparsity S] FILE...)."""
    import argparse
    ap = argparse.ArgumentParser(prog="python3 -m trt_sparse.cost_model",
                                 description="fit COEFFS to trt-sparse bench-kernels results")
    ap.add_argument("files", nargs="+", metavar="FILE.json")
    ap.add_argument("--max-sparsity", type=float, default=0.99,
                    help="leave out cases above this sparsity (near-empty layers are launch-bound, outside the "
                         "log-linear regime; default 0.99)")
    ap.add_argument("--evaluate", action="store_true",
                    help="score the current COEFFS on the files (held-out check) instead of fitting new ones")
    ap.add_argument("--margins", type=float, nargs="+", metavar="M",
                    help="with --evaluate: also what --policy model --model-margin M would convert on the files "
                         "(converted, converted but slower, geomean vs all-dense and vs deciding by measurement)")
    a = ap.parse_args(sys.argv[1:] if argv is None else argv)
    if a.margins and not a.evaluate:
        ap.error("--margins goes with --evaluate")
    results = []
    for path in a.files:
        with open(path) as f:
            results.extend(r for r in json.load(f)["results"] if r["sparsity"] <= a.max_sparsity)
    if a.evaluate:
        print("errors of the current COEFFS: " + json.dumps(evaluate(results), indent=1))
        if a.margins:
            print("decisions of the current COEFFS per --model-margin: " +
                  json.dumps({str(m): v for m, v in decision_study(results, a.margins).items()}, indent=1))
        return 0
    coeffs, errors = fit(results)
    print("COEFFS = " + json.dumps(coeffs, indent=1))
    print("fit errors: " + json.dumps(errors, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
