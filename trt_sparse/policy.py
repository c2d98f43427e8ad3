"""Per-layer selection policies of ``trt-sparse convert`` (``--policy threshold|model|measured``).

Every policy answers ``decide(layer, nnz, sparsity) -> (convert, reason, predicted_speedup)``
where ``layer`` is the cost-model layer dict (C, K, R, S, H, W, stride_h, stride_w,
pads, dilation_h, dilation_w, plus name and dtype). A layer is converted only when
the policy expects the sparse kernel to beat the best dense kernel, so a converted
model is never predicted slower than the dense one:

* ``threshold`` -- sparsity >= ``--min-sparsity`` (a heuristic, no speed data);
* ``model``     -- also needs ``trt_sparse.cost_model.predict_speedup(...) > margin`` (default
  ``DEFAULT_MODEL_MARGIN``, about one median model error: a layer predicted only slightly faster stays dense);
* ``measured``  -- also needs a measured speedup > 1 from a ``trt-sparse bench-kernels``
  JSON (same geometry, batch and dtype; the nearest measured sparsity).
"""
import os

from .errors import TrtSparseError
from .jsonio import load_json

DEFAULT_MIN_SPARSITY = 0.8
#: ``--policy model`` converts a layer only if its predicted speedup exceeds this. The model's median abs log error
#: is ~0.2 (x1.22); on the round-14 H200 runs (346 cases, docs/PERFORMANCE.md) a margin of 1.25 instead of 1.0
#: cut the converted cases that were slower than dense from 19 of 66 to 7 of 43 (worst 0.46x -> 0.77x) at a
#: slightly better geomean over the per-layer choices (1.032x -> 1.034x of all-dense).
DEFAULT_MODEL_MARGIN = 1.25
POLICIES = ("threshold", "model", "measured")


def normalize_dtype(dtype):
    """'fp32' / 'fp16' from the spellings used by models, torch and the bench JSON."""
    d = str(dtype).lower().replace("torch.", "")
    if d in ("fp32", "float32", "float", "f32"):
        return "fp32"
    if d in ("fp16", "float16", "half", "f16"):
        return "fp16"
    raise TrtSparseError("unknown dtype {!r} (expected fp32 or fp16)".format(dtype))


class ThresholdPolicy(object):
    """Convert when the layer's sparsity reaches ``min_sparsity``."""

    name = "threshold"

    def __init__(self, min_sparsity=DEFAULT_MIN_SPARSITY):
        min_sparsity = float(min_sparsity)
        if not 0.0 <= min_sparsity <= 1.0:
            raise TrtSparseError("--min-sparsity must be in [0, 1], got {}".format(min_sparsity))
        self.min_sparsity = min_sparsity

    def describe(self):
        """JSON-friendly description."""
        return {"name": self.name, "min_sparsity": self.min_sparsity}

    def _threshold(self, sparsity):
        if sparsity < self.min_sparsity:
            return False, "sparsity {:.3f} < --min-sparsity {:.2f}".format(sparsity, self.min_sparsity)
        return True, "sparsity {:.3f} >= {:.2f}".format(sparsity, self.min_sparsity)

    def decide(self, layer, nnz, sparsity):
        """(convert, reason, predicted speedup or None)."""
        ok, reason = self._threshold(sparsity)
        return ok, reason, None

    def weight_features(self, weight):
        """Features of the layer's pruned weight that decide() reads from its layer dict (none here)."""
        return {}


class ModelPolicy(ThresholdPolicy):
    """Threshold + the kernels' cost model: convert only if the predicted speedup is > ``margin``."""

    name = "model"

    def __init__(self, min_sparsity=0.0, batch=1, dtype="fp32", predict=None, margin=DEFAULT_MODEL_MARGIN):
        super(ModelPolicy, self).__init__(min_sparsity)
        margin = float(margin)
        if not 0.0 < margin < float("inf"):  # also refuses NaN
            raise TrtSparseError("--model-margin must be a finite number > 0, got {}".format(margin))
        self.margin = margin
        self.batch = int(batch)
        self.dtype = normalize_dtype(dtype) if dtype else None
        if predict is None:
            try:
                from .cost_model import predict_speedup as predict
            except ImportError as exc:
                raise TrtSparseError(
                    "cost model not available (trt_sparse.cost_model: {}); use --policy threshold or "
                    "--policy measured --measurements FILE".format(exc))
        self.predict = predict

    def describe(self):
        """JSON-friendly description."""
        return {"name": self.name, "min_sparsity": self.min_sparsity, "batch": self.batch, "dtype": self.dtype,
                "margin": self.margin}

    def weight_features(self, weight):
        """union16: the tensor-core work share of the weight (cost-model feature of fp16 layers)."""
        from .cost_model import measured_union_fraction

        return {"union16": measured_union_fraction(weight)}

    def decide(self, layer, nnz, sparsity):
        """(convert, reason, predicted speedup or None)."""
        ok, reason = self._threshold(sparsity)
        if not ok:
            return ok, reason, None
        if layer.get("H") is None or layer.get("W") is None:
            return False, "input H/W unknown, cannot predict (give --input-shape)", None
        dtype = self.dtype or layer.get("dtype") or "fp32"
        geometry = {k: layer[k] for k in ("C", "K", "R", "S", "H", "W", "stride_h", "stride_w", "pads",
                                          "dilation_h", "dilation_w")}
        if layer.get("union16") is not None:  # measured by convert: tensor-core work of the weights
            geometry["union16"] = float(layer["union16"])
        try:
            speedup = float(self.predict(geometry, int(nnz), self.batch, dtype))
        except TrtSparseError:
            raise
        except Exception as exc:  # the model refuses a geometry: keep the layer dense, say why
            return False, "cost model failed: {}".format(" ".join(str(exc).split())[:120]), None
        if speedup > self.margin:
            return True, "predicted speedup {:.2f}x".format(speedup), speedup
        if speedup > 1.0:
            return False, "predicted speedup {:.2f}x <= margin {:g} (within the model's error)".format(
                speedup, self.margin), speedup
        return False, "predicted speedup {:.2f}x <= 1 (dense is faster)".format(speedup), speedup


class MeasuredPolicy(ThresholdPolicy):
    """Threshold + measured speedups from a ``trt-sparse bench-kernels`` JSON."""

    name = "measured"

    def __init__(self, path, min_sparsity=0.0, batch=1, dtype="fp32"):
        super(MeasuredPolicy, self).__init__(min_sparsity)
        self.path = path
        self.batch = int(batch)
        self.dtype = normalize_dtype(dtype) if dtype else None
        self.entries = load_measurements(path)

    def describe(self):
        """JSON-friendly description."""
        return {"name": self.name, "min_sparsity": self.min_sparsity, "batch": self.batch, "dtype": self.dtype,
                "measurements": os.path.abspath(self.path), "entries": len(self.entries)}

    #: sparsities this close count as the same (pruned layers rarely land on the benchmarked value exactly)
    SPARSITY_TOLERANCE = 0.005

    def lookup(self, layer, sparsity, dtype):
        """The measured entry for this geometry/batch/dtype that bounds the layer's speedup from below.

        Sparse time only falls as sparsity rises while the dense time does not change, so a measurement at
        a sparsity at or below the layer's (within SPARSITY_TOLERANCE) is a lower bound: the nearest such
        entry is returned. With only sparser measurements, the nearest of them is returned with
        ``bound="upper"`` (its speedup overstates the layer's); None without any.
        """
        key = geometry_key(layer)
        below, above = None, None
        for e in self.entries:
            if e["key"] != key or e["batch"] != self.batch or e["dtype"] != dtype:
                continue
            if e["sparsity"] <= sparsity + self.SPARSITY_TOLERANCE:
                if below is None or e["sparsity"] > below["sparsity"]:
                    below = e
            elif above is None or e["sparsity"] < above["sparsity"]:
                above = e
        if below is not None:
            return dict(below, bound="lower")
        if above is not None:
            return dict(above, bound="upper")
        return None

    def decide(self, layer, nnz, sparsity):
        """(convert, reason, measured speedup or None)."""
        ok, reason = self._threshold(sparsity)
        if not ok:
            return ok, reason, None
        if layer.get("H") is None or layer.get("W") is None:
            return False, "input H/W unknown, cannot match a measurement (give --input-shape)", None
        dtype = self.dtype or layer.get("dtype") or "fp32"
        e = self.lookup(layer, sparsity, dtype)
        if e is None:
            return False, "no measurement for this geometry at batch {} {}".format(self.batch, dtype), None
        where = "measured at sparsity {:.3f}".format(e["sparsity"])
        if e["speedup"] <= 1.0:
            return False, "{}: {:.2f}x <= 1 (dense is faster)".format(where, e["speedup"]), e["speedup"]
        if e["bound"] == "upper":
            return False, ("{}: {:.2f}x, but the layer ({:.3f}) is less sparse than every measurement, so that "
                           "speedup is only an upper bound; benchmark at its sparsity".format(
                               where, e["speedup"], sparsity)), e["speedup"]
        return True, "{}: {:.2f}x".format(where, e["speedup"]), e["speedup"]


def _pair(value, what):
    if isinstance(value, (int, float)):
        return (int(value), int(value))
    vals = [int(v) for v in value]
    if len(vals) == 1:
        return (vals[0], vals[0])
    if len(vals) == 2:
        return tuple(vals)
    raise ValueError("{} must be an int or 2 ints, got {!r}".format(what, value))


def _pads4(value):
    if isinstance(value, (int, float)):
        return (int(value),) * 4
    vals = [int(v) for v in value]
    if len(vals) == 1:
        return (vals[0],) * 4
    if len(vals) == 2:  # (pad_h, pad_w), symmetric
        return (vals[0], vals[1], vals[0], vals[1])
    if len(vals) == 4:
        return tuple(vals)
    raise ValueError("pad must be an int, 2 ints or 4 ints, got {!r}".format(value))


def geometry_key(layer):
    """Hashable geometry of a cost-model layer dict: (C, K, H, W, R, S, strides, pads, dilations)."""
    return (int(layer["C"]), int(layer["K"]), int(layer["H"]), int(layer["W"]), int(layer["R"]), int(layer["S"]),
            (int(layer["stride_h"]), int(layer["stride_w"])), tuple(int(p) for p in layer["pads"]),
            (int(layer["dilation_h"]), int(layer["dilation_w"])))


def _entry_speedup(res):
    """Speedup of one result against the best dense baseline."""
    dense = res.get("dense_us")
    sparse = res.get("sparse_us")
    if isinstance(dense, dict) and dense and sparse:
        vals = [float(v) for v in dense.values() if v is not None]
        if vals:
            return min(vals) / float(sparse)
    if isinstance(dense, (int, float)) and sparse:
        return float(dense) / float(sparse)
    sp = res.get("speedup")
    if isinstance(sp, dict) and sp:
        if "best" in sp:
            return float(sp["best"])
        return min(float(v) for v in sp.values() if v is not None)
    if isinstance(sp, (int, float)):
        return float(sp)
    raise ValueError("no sparse_us/dense_us or speedup")


def load_measurements(path):
    """Parse a bench-kernels JSON into a list of dicts (key, batch, dtype, sparsity, speedup)."""
    doc = load_json(path, "--measurements")
    results = doc.get("results") if isinstance(doc, dict) else None
    if not isinstance(results, list):
        raise TrtSparseError("--measurements {}: expected a bench-kernels JSON with a 'results' list".format(path))
    entries = []
    for i, res in enumerate(results):
        try:
            lay = res["layer"]
            kernel = _pair(lay["kernel"], "kernel")
            stride = _pair(lay.get("stride", 1), "stride")
            dil = _pair(lay.get("dilation", 1), "dilation")
            pads = _pads4(lay.get("pad", 0))
            geom = {"C": lay["C"], "K": lay["K"], "H": lay["H"], "W": lay["W"], "R": kernel[0], "S": kernel[1],
                    "stride_h": stride[0], "stride_w": stride[1], "pads": pads,
                    "dilation_h": dil[0], "dilation_w": dil[1]}
            entries.append({
                "key": geometry_key(geom), "batch": int(res["batch"]), "dtype": normalize_dtype(res["dtype"]),
                "sparsity": float(res["sparsity"]), "speedup": _entry_speedup(res),
            })
        except (KeyError, TypeError, ValueError, ZeroDivisionError, TrtSparseError) as exc:
            raise TrtSparseError("--measurements {}: results[{}] is malformed ({}: {})".format(
                path, i, type(exc).__name__, exc))
    return entries


def make_policy(name, min_sparsity=None, measurements=None, batch=1, dtype=None, model_margin=None):
    """Build the policy named by ``--policy``."""
    if model_margin is not None and name != "model":
        raise TrtSparseError("--model-margin is only used with --policy model")
    if name == "threshold":
        return ThresholdPolicy(DEFAULT_MIN_SPARSITY if min_sparsity is None else min_sparsity)
    if name == "model":
        return ModelPolicy(0.0 if min_sparsity is None else min_sparsity, batch, dtype,
                           margin=DEFAULT_MODEL_MARGIN if model_margin is None else model_margin)
    if name == "measured":
        if not measurements:
            raise TrtSparseError("--policy measured needs --measurements FILE (a trt-sparse bench-kernels JSON)")
        return MeasuredPolicy(measurements, 0.0 if min_sparsity is None else min_sparsity, batch, dtype)
    raise TrtSparseError("unknown policy {!r}; choose from {}".format(name, ", ".join(POLICIES)))
