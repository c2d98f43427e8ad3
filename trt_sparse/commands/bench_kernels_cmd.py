"""``trt-sparse bench-kernels``: our sparse kernel vs cuDNN dense (through torch), per layer.

For every (layer, batch, sparsity, dtype) of the sweep, in one process:

* sparse: a plan of a uniform-random (Bernoulli, seeded) pruned weight, tuned
  (tsc_plan_tune) on the case's buffers, timed by CUDA-graph replay;
* dense (cudnn.benchmark=True, the pruned weight densified): fp32 with TF32
  allowed (torch default) NCHW and NHWC -> ``tf32_best``; fp32 TF32 off, best
  layout -> ``fp32_notf32``; fp16 NCHW and NHWC -> ``fp16_best``;
* times are the median of >= 5 graph replays (each replay = many launches on
  rotating input/output buffers, ~2x the L2 where cheap), after warm-up;
* roofline floor = max(useful FLOPs / measured fp32 FMA peak, bytes / measured
  copy bandwidth) + one (empty-kernel) launch; our fraction = floor / time;
* correctness: relative error vs a float64 torch conv of the same input.

Results JSON: ``{"meta": {...}, "results": [...], "summary": {...}}``.
"""
import datetime
import json
import math
import os
import platform
import subprocess
import sys
import tempfile

import numpy as np

from ..errors import TrtSparseError
from ..jsonio import load_json

HELP = "benchmark the sparse CUDA kernels against cuDNN dense convolution (needs a GPU, torch, the kernel library)"

L2_ROTATE_BYTES = 120 << 20  # rotate buffers until ~2x the H200's 60 MB L2 (capped)
MAX_BUFFERS = 32


#: sparsities of a layer without its own when --sparsity is not given
DEFAULT_SPARSITIES = (0.9, 0.95)


def add_arguments(parser):
    parser.add_argument("--layers", required=True, metavar="FILE", help="layers JSON (format of bench/layers.json)")
    parser.add_argument("--batch", type=int, nargs="+", default=[1, 8], metavar="N", help="batch sizes (default 1 8)")
    parser.add_argument("--sparsity", type=float, nargs="+", default=None, metavar="S",
                        help="sparsities (default: a layer's own 'sparsity' from the layers file, as written by "
                             "trt-sparse inspect --layers-json; else 0.9 0.95)")
    parser.add_argument("--dtype", nargs="+", default=["fp32", "fp16"], choices=["fp32", "fp16"],
                        help="I/O dtypes (default fp32 fp16)")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="only these layer names")
    parser.add_argument("--repeats", type=int, default=7, help="timed graph replays, median reported (>= 5)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the pruning masks and data (default 0)")
    parser.add_argument("--json", required=True, metavar="OUT.json", help="results JSON (written atomically)")
    parser.add_argument("--plot", metavar="OUT.png", help="plot of speedup vs sparsity (needs matplotlib)")
    parser.add_argument("--no-dense", action="store_true", help="time only the sparse kernel")
    parser.add_argument("--pattern", default="unstructured", metavar="unstructured|vector:V",
                        help="pruning mask: uniform random (default), or vector:V (V consecutive output channels "
                             "share positions; reported as its own regime)")
    parser.add_argument("--allow-tf32", action="store_true",
                        help="fp32 plans may also run TF32 tensor-core variants (results change at ~1e-3, like "
                             "TensorRT's TF32 flag; recorded in the JSON; off by default)")


def _atomic_write(path, text):
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=d)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def load_layers(path):
    """Layer dicts of a layers JSON; one-line errors for bad files."""
    doc = load_json(path, "--layers")
    layers = doc.get("layers") if isinstance(doc, dict) else None
    if not isinstance(layers, list) or not layers:
        raise TrtSparseError("--layers {}: expected an object with a non-empty 'layers' list".format(path))
    out = []
    for i, lay in enumerate(layers):
        try:
            d = {"name": str(lay["name"]), "C": int(lay["C"]), "K": int(lay["K"]), "H": int(lay["H"]),
                 "W": int(lay["W"]), "kernel": int(lay["kernel"]), "stride": int(lay.get("stride", 1)),
                 "pad": int(lay.get("pad", 0)), "dilation": int(lay.get("dilation", 1))}
        except (KeyError, TypeError, ValueError) as exc:
            raise TrtSparseError("--layers {}: layers[{}] is malformed ({})".format(path, i, exc))
        if min(d["C"], d["K"], d["H"], d["W"], d["kernel"], d["stride"], d["dilation"]) < 1 or d["pad"] < 0:
            raise TrtSparseError("--layers {}: layers[{}] ({}) has a non-positive size".format(path, i, d["name"]))
        if lay.get("sparsity") is not None:  # the layer's own sparsity (one value or a list)
            own = lay["sparsity"] if isinstance(lay["sparsity"], list) else [lay["sparsity"]]
            try:
                own = [float(v) for v in own]
            except (TypeError, ValueError):
                own = []
            if not own or not all(0.0 <= v < 1.0 for v in own):
                raise TrtSparseError("--layers {}: layers[{}] ({}): 'sparsity' must be a number or a non-empty list "
                                     "of numbers in [0, 1), got {!r}".format(path, i, d["name"], lay["sparsity"]))
            d["sparsity"] = own
        out.append(d)
    return out


def layer_sparsities(layer, requested):
    """Sparsities to time ``layer`` at: ``requested`` (--sparsity) when given, else the layer's own, else the
    defaults."""
    return list(requested or layer.get("sparsity") or DEFAULT_SPARSITIES)


def geomean(vals):
    """Geometric mean of positive values (None if empty)."""
    vals = [v for v in vals if v and v > 0]
    return math.exp(sum(math.log(v) for v in vals) / len(vals)) if vals else None


class _Timer(object):
    """CUDA-graph replay timing of a callable over rotating buffers."""

    def __init__(self, torch, repeats):
        self.torch = torch
        self.repeats = max(5, int(repeats))

    def time_us(self, call, nbuf):
        """Median microseconds per call(i) (i = rotating buffer index), CUDA-graph replays."""
        torch = self.torch
        for i in range(nbuf):
            call(i)
        torch.cuda.synchronize()
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        for i in range(10):
            call(i % nbuf)
        e1.record()
        e1.synchronize()
        est = max(e0.elapsed_time(e1) * 1e3 / 10, 1.0)
        inner = int(min(400, max(20, 3000.0 / est)))
        inner = max(inner, nbuf) // nbuf * nbuf
        g = torch.cuda.CUDAGraph()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for i in range(nbuf):
                call(i)
        torch.cuda.current_stream().wait_stream(side)
        with torch.cuda.graph(g):
            for i in range(inner):
                call(i % nbuf)
        g.replay()
        torch.cuda.synchronize()
        times = []
        for _ in range(self.repeats):
            e0.record()
            g.replay()
            e1.record()
            e1.synchronize()
            times.append(e0.elapsed_time(e1) * 1e3 / inner)
        del g
        return float(np.median(times)), [float(t) for t in times]


def _meta(torch, tcuda, peak_tflops, bw_gbs, launch_us):
    def git(*a):
        try:
            return subprocess.check_output(("git",) + a, stderr=subprocess.DEVNULL).decode().strip()
        except Exception:
            return None
    props = torch.cuda.get_device_properties(0)
    drv = None
    try:
        drv = subprocess.check_output(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                      stderr=subprocess.DEVNULL).decode().split("\n")[0].strip()
    except Exception:
        pass
    return {
        "device": torch.cuda.get_device_name(0), "sm_count": props.multi_processor_count,
        "compute_capability": "{}.{}".format(props.major, props.minor), "driver": drv,
        "cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version(), "torch": torch.__version__,
        "python": platform.python_version(),
        # TRT_SPARSE_COMMIT: the commit of record where the tree was copied without its current git state
        "commit": os.environ.get("TRT_SPARSE_COMMIT") or git("rev-parse", "HEAD"),
        "dirty": False if os.environ.get("TRT_SPARSE_COMMIT") else bool(git("status", "--porcelain", "--untracked-files=no")),
        "date": datetime.datetime.utcnow().replace(microsecond=0).isoformat() + "Z",
        # the kernel library's switches read at plan creation (e.g. TRT_SPARSE_PDL=1: programmatic dependent launch)
        "env": {k: v for k, v in sorted(os.environ.items()) if k.startswith("TRT_SPARSE_") and k != "TRT_SPARSE_COMMIT"},
        "kernel_library": tcuda.find_library(), "fp32_fma_peak_tflops": peak_tflops,
        "copy_bandwidth_gbs": bw_gbs, "graph_launch_us": launch_us,
        "method": "CUDA-graph replay of many launches over rotating buffers, median of replays; cudnn.benchmark=True; "
                  "dense weight = the pruned weight densified",
    }


def _measure_bandwidth(torch):
    a = torch.empty(1 << 28, dtype=torch.float32, device="cuda")  # 1 GiB
    b = torch.empty_like(a)
    b.copy_(a)
    torch.cuda.synchronize()
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    best = 1e30
    for _ in range(5):
        e0.record()
        b.copy_(a)
        e1.record()
        e1.synchronize()
        best = min(best, e0.elapsed_time(e1))
    nbytes = 2 * a.numel() * 4
    del a, b
    return nbytes / (best * 1e-3) / 1e9


def layer_plan(sw, lay, dtype, layout="NCHW", allow_tf32=False):
    """Kernel plan of a benchmark layer's sparse weight (no bias, no activation) in the given I/O layout."""
    from .. import cuda as tcuda
    st, pd, dl = lay["stride"], lay["pad"], lay["dilation"]
    return tcuda.SparseConvPlan(sw, None, (st, st), (pd,) * 4, (dl, dl), 0, 0.0, 6.0, dtype, layout,
                                allow_tf32=allow_tf32)


def _pruned_weight(rng, lay, sparsity, vec=1):
    """Random He-scaled weight of the layer with a Bernoulli mask of the given sparsity; vec > 1 shares one
    mask among `vec` consecutive output channels (the `prune --pattern vector:V` structure)."""
    from .. import format as fmt
    k, c, r = lay["K"], lay["C"], lay["kernel"]
    w = (rng.standard_normal((k, c, r, r)) * math.sqrt(2.0 / (c * r * r))).astype(np.float32)
    drop = rng.random(((k + vec - 1) // vec, c, r, r)) < sparsity
    w[np.repeat(drop, vec, axis=0)[:k]] = 0.0
    return w, fmt.pack(w)


def run(args):
    layers = load_layers(args.layers)
    if args.only:
        layers = [l for l in layers if l["name"] in set(args.only)]
        if not layers:
            raise TrtSparseError("--only matched no layer of {}".format(args.layers))
    from ..prune import parse_pattern
    vec = parse_pattern(args.pattern)
    for s in args.sparsity or ():
        if not 0.0 <= s < 1.0:
            raise TrtSparseError("--sparsity {} must be in [0, 1)".format(s))
    if os.path.abspath(args.json) == os.path.abspath(args.layers):
        raise TrtSparseError("--json must not overwrite the --layers file")
    try:
        import torch
    except ImportError:
        raise TrtSparseError("bench-kernels needs torch with CUDA (pip install torch)")
    if not torch.cuda.is_available():
        raise TrtSparseError("bench-kernels needs a CUDA GPU (torch.cuda.is_available() is False)")
    from .. import cuda as tcuda
    tcuda.load_library()
    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover
        def tqdm(it, **kw):
            return it
    import torch.nn.functional as F

    torch.backends.cudnn.benchmark = True
    timer = _Timer(torch, args.repeats)
    peak = tcuda.fma_peak_tflops()
    bw = _measure_bandwidth(torch)
    launch_us, _ = timer.time_us(lambda i: tcuda.empty_kernel(), 1)
    meta = _meta(torch, tcuda, peak, bw, launch_us)
    print("device {}: fp32 FMA peak {:.1f} TFLOP/s, copy {:.0f} GB/s, graph launch {:.2f} us".format(
        meta["device"], peak, bw, launch_us), file=sys.stderr)

    cases = [(l, b, dt) for l in layers for b in args.batch for dt in args.dtype]
    results = []
    bar = tqdm(total=sum(len(layer_sparsities(l, args.sparsity)) for l, _, _ in cases), desc="bench-kernels",
               unit="case")
    for lay, batch, dtype in cases:
        tdt = torch.float16 if dtype == "fp16" else torch.float32
        esz = 2 if dtype == "fp16" else 4
        rng = np.random.default_rng([args.seed, batch])
        N, C, H, W, K, R = batch, lay["C"], lay["H"], lay["W"], lay["K"], lay["kernel"]
        st, pd, dl = lay["stride"], lay["pad"], lay["dilation"]
        P = (H + 2 * pd - dl * (R - 1) - 1) // st + 1
        Q = (W + 2 * pd - dl * (R - 1) - 1) // st + 1
        in_bytes, out_bytes = N * C * H * W * esz, N * K * P * Q * esz
        nbuf = int(max(1, min(MAX_BUFFERS, math.ceil(L2_ROTATE_BYTES / float(in_bytes + out_bytes)))))
        xs = [torch.randn(N, C, H, W, device="cuda").to(tdt) for _ in range(nbuf)]
        ys = [torch.empty(N, K, P, Q, device="cuda", dtype=tdt) for _ in range(nbuf)]
        dense_cache = {}
        geometry = {k: v for k, v in lay.items() if k != "sparsity"}
        for sparsity in layer_sparsities(lay, args.sparsity):
            rng_w = np.random.default_rng([args.seed, int(round(sparsity * 1000)), C, K, R, H])
            w, sw = _pruned_weight(rng_w, lay, sparsity, vec)
            plan = layer_plan(sw, lay, dtype, allow_tf32=args.allow_tf32 and dtype == "fp32")
            plan.tune(xs[0], ys[0])
            desc = plan.describe()
            variant = desc.split("]=")[-1] if "]=" in desc else "heuristic"
            tma = " tma=1" in desc  # the plan may stage by TMA (sm_90; per launch where the box rules hold)
            sparse_us, sparse_all = timer.time_us(lambda i: plan.enqueue(xs[i], ys[i]), nbuf)
            # correctness of what was timed: float64 dense conv of the same input
            plan.enqueue(xs[0], ys[0])
            torch.cuda.synchronize()
            wt64 = torch.from_numpy(w).to("cuda", torch.float64)
            ref = F.conv2d(xs[0].double(), wt64, None, st, pd, dl)
            rel = float(torch.linalg.vector_norm(ys[0].double() - ref) / torch.linalg.vector_norm(ref).clamp_min(1e-30))
            del ref, wt64
            # dense baselines (pruned weight densified), once per sparsity
            dense = {}
            if not args.no_dense:
                dense = _dense_times(torch, F, timer, xs, ys, w, st, pd, dl, dtype, nbuf)
            nnz = int(sw.nnz)
            flops = 2.0 * nnz * P * Q * N
            nbytes = in_bytes + out_bytes + 8 * nnz + 4 * K
            floor_us = max(flops / (peak * 1e12), nbytes / (bw * 1e9)) * 1e6 + launch_us
            speed = {k: dense[k] / sparse_us for k in ("tf32_best", "fp32_notf32", "fp16_best") if k in dense}
            results.append({
                "layer": dict(geometry), "batch": batch, "sparsity": sparsity, "dtype": dtype, "nnz": nnz,
                "pattern": args.pattern, "allow_tf32": bool(args.allow_tf32 and dtype == "fp32"),
                "sparse_us": sparse_us, "sparse_us_all": sparse_all, "sparse_variant": variant, "tma": tma,
                "dense_us": dense, "speedup": speed, "rel_err": rel,
                "useful_gflop": flops / 1e9, "bytes": nbytes, "floor_us": floor_us,
                "roofline_fraction": floor_us / sparse_us, "useful_tflops": flops / (sparse_us * 1e-6) / 1e12,
            })
            plan.close()
            bar.update(1)
        del xs, ys
        torch.cuda.empty_cache()
    bar.close()
    summary = summarize(results)
    doc = {"meta": meta, "results": results, "summary": summary}
    _atomic_write(args.json, json.dumps(doc, indent=1, sort_keys=False) + "\n")
    print(format_summary(summary))
    if args.plot:
        plot(results, args.plot)
    return 0


def _dense_times(torch, F, timer, xs, ys, w, st, pd, dl, dtype, nbuf):
    """Dense cuDNN times (us) per baseline key for this weight."""
    out = {}
    wt = torch.from_numpy(w).cuda()
    modes = [("fp16", True)] if dtype == "fp16" else [("tf32", True), ("fp32_notf32", False)]
    for name, tf32 in modes:
        torch.backends.cudnn.allow_tf32 = tf32
        try:
            for layout in ("nchw", "nhwc"):
                wd = wt.half() if dtype == "fp16" else wt
                if layout == "nhwc":
                    xin = [x.contiguous(memory_format=torch.channels_last) for x in xs]
                    wd = wd.contiguous(memory_format=torch.channels_last)
                else:
                    xin = xs
                t, _ = timer.time_us(lambda i: F.conv2d(xin[i], wd, None, st, pd, dl), nbuf)
                out["{}_{}".format(name, layout)] = t
                del xin
        finally:
            torch.backends.cudnn.allow_tf32 = True
        best = min(out["{}_nchw".format(name)], out["{}_nhwc".format(name)])
        out["fp16_best" if name == "fp16" else ("tf32_best" if name == "tf32" else "fp32_notf32")] = best
    return out


def _is_target_layer(lay):
    return lay["kernel"] == 3 and lay["stride"] == 1


def summarize(results):
    """Geometric means per (dtype, batch, sparsity), all layers and the 3x3 stride-1 target subset."""
    groups = {}
    for r in results:
        for subset in ("all", "3x3s1"):
            if subset == "3x3s1" and not _is_target_layer(r["layer"]):
                continue
            key = "{}|b{}|s{:g}|{}".format(r["dtype"], r["batch"], r["sparsity"], subset)
            groups.setdefault(key, []).append(r)
    out = {}
    for key, rs in sorted(groups.items()):
        ent = {"layers": len(rs)}
        for base in ("tf32_best", "fp32_notf32", "fp16_best"):
            vals = [r["speedup"][base] for r in rs if base in r["speedup"]]
            if vals:
                ent["geomean_vs_" + base] = geomean(vals)
                ent["min_vs_" + base] = min(vals)
        ent["median_time_over_floor"] = float(np.median([r["sparse_us"] / r["floor_us"] for r in rs]))
        ent["geomean_roofline_fraction"] = geomean([r["roofline_fraction"] for r in rs])
        ent["max_rel_err"] = max(r["rel_err"] for r in rs)
        out[key] = ent
    return out


def format_summary(summary):
    """A plain-text table of the summary."""
    lines = ["{:<28} {:>6} {:>10} {:>10} {:>10} {:>10} {:>9} {:>9}".format(
        "dtype|batch|sparsity|set", "layers", "vs_tf32", "min_tf32", "vs_notf32", "vs_fp16", "t/floor", "maxerr")]
    for key, e in summary.items():
        def f(k):
            v = e.get(k)
            return "{:.2f}".format(v) if v is not None else "-"
        lines.append("{:<28} {:>6} {:>10} {:>10} {:>10} {:>10} {:>9} {:>9.1e}".format(
            key, e["layers"], f("geomean_vs_tf32_best"), f("min_vs_tf32_best"), f("geomean_vs_fp32_notf32"),
            f("geomean_vs_fp16_best"), f("median_time_over_floor"), e["max_rel_err"]))
    return "\n".join(lines)


def plot(results, path):
    """Speedup vs sparsity per layer (batch 1), against the best dense baseline of the dtype."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise TrtSparseError("--plot needs matplotlib (pip install matplotlib)")
    dtypes = sorted(set(r["dtype"] for r in results))
    batches = sorted(set(r["batch"] for r in results))
    fig, axes = plt.subplots(len(batches), len(dtypes), figsize=(6 * len(dtypes), 4 * len(batches)), squeeze=False)
    for bi, b in enumerate(batches):
        for di, dt in enumerate(dtypes):
            ax = axes[bi][di]
            base = "fp16_best" if dt == "fp16" else "tf32_best"
            names = sorted(set(r["layer"]["name"] for r in results))
            for n in names:
                rs = sorted((r for r in results if r["layer"]["name"] == n and r["batch"] == b and r["dtype"] == dt
                             and base in r["speedup"]), key=lambda r: r["sparsity"])
                if rs:
                    ax.plot([r["sparsity"] for r in rs], [r["speedup"][base] for r in rs], marker="o",
                            label=n, alpha=0.8)
            ax.axhline(1.0, color="k", lw=0.8)
            ax.set_yscale("log")
            ax.set_title("{} batch {}: speedup vs cuDNN {}".format(dt, b, base))
            ax.set_xlabel("sparsity")
            ax.set_ylabel("dense time / sparse time")
    axes[0][0].legend(fontsize=6, ncol=2)
    fig.tight_layout()
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".png", dir=d)
    os.close(fd)
    fig.savefig(tmp, dpi=110)
    os.replace(tmp, path)
