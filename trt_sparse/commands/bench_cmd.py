"""``trt-sparse bench``: dense vs sparse engine latency, throughput, memory and output agreement."""
import collections
import contextlib
import os
import shutil
import sys
import tempfile

from ..errors import TrtSparseError
from .build_cmd import add_build_arguments, add_shape_arguments, build_kwargs

HELP = "build (or load) a dense and a sparse engine, check their outputs agree, time both and report the speedup"

ENGINE_EXTS = (".engine", ".plan", ".trt")
DEFAULT_RTOL = {"fp32": 1e-3, "fp16": 2e-2}
#: fp32 engines whose sparse model has nodes with allow_tf32 = 1: the plugin's TF32 variants round the
#: products' factors to a 10-bit mantissa (the kernel tests bound them by the same 3e-3)
DEFAULT_RTOL_TF32 = 3e-3


def add_arguments(parser):
    parser.add_argument("dense", help="dense model: .onnx (built here) or a built .engine")
    parser.add_argument("sparse", help="sparse (converted) model: .onnx (built with the plugin) or .engine")
    parser.add_argument("--iterations", type=int, default=200, metavar="N", help="timed iterations (default 200)")
    parser.add_argument("--warmup", type=int, default=20, metavar="N", help="warm-up iterations (default 20)")
    parser.add_argument("--batch", metavar="B[,B...]",
                        help="batch sizes to sweep (first dimension of every input; ONNX models get a "
                             "profile covering them)")
    parser.add_argument("--inputs", metavar="FILE", help=".npy (one input) or .npz (one array per input name); "
                                                         "default: seeded random data")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random inputs (default 0)")
    parser.add_argument("--cuda-graph", action="store_true", help="time replays of a captured CUDA graph")
    parser.add_argument("--no-layer-profile", action="store_true", help="skip the per-layer profile (IProfiler)")
    parser.add_argument("--rtol", type=float,
                        help="max relative output difference sparse vs dense (default 1e-3 fp32, 3e-3 fp32 when "
                             "the sparse model has nodes with allow_tf32=1, 2e-2 fp16)")
    parser.add_argument("--report", metavar="FILE", action="append", default=[],
                        help="write the report: .json or .md (repeatable)")
    parser.add_argument("--plot", metavar="FILE", help="latency plot (.png/.svg/.pdf, needs matplotlib)")
    parser.add_argument("--engine-dir", metavar="DIR", help="keep the engines built from .onnx here (default: "
                                                            "a temporary directory)")
    parser.add_argument("--cuda-backend", choices=("auto", "cuda-python", "pycuda"), default="auto",
                        help="device memory / timing backend (default: cuda-python, else pycuda)")
    parser.add_argument("--device", type=int, default=0, help="CUDA device index")
    add_shape_arguments(parser)
    add_build_arguments(parser)


def tf32_node_count(sparse_path):
    """SparseConv2d nodes with allow_tf32 = 1 in the sparse model: read from the .onnx (validated), or from
    an engine's build sidecar (``onnx.allow_tf32_nodes``); None when an engine has no such record."""
    from ..engine import read_sidecar
    from ..onnx_io import load_model, tf32_layers

    if os.path.splitext(sparse_path)[1].lower() == ".onnx":
        return len(tf32_layers(load_model(sparse_path, load_external_data=False)))
    meta = read_sidecar(sparse_path) or {}
    return (meta.get("onnx") or {}).get("allow_tf32_nodes")


def default_rtol(precision, n_tf32):
    """(rtol, why) of the output check when --rtol is not given."""
    if precision == "fp32" and n_tf32:
        return DEFAULT_RTOL_TF32, "fp32 with TF32 allowed on {} sparse layer(s)".format(n_tf32)
    return DEFAULT_RTOL[precision], precision


def parse_batches(text):
    """``"1,8,32"`` -> [1, 8, 32] (sorted, unique); TrtSparseError when malformed."""
    if not text:
        return None
    try:
        values = sorted({int(v) for v in text.split(",") if v.strip()})
    except ValueError:
        raise TrtSparseError("bad --batch {!r}: expected integers like 1,8,32".format(text))
    if not values or values[0] < 1:
        raise TrtSparseError("bad --batch {!r}: batch sizes must be >= 1".format(text))
    return values


def onnx_inputs(onnx_path):
    """[(name, dims)] of an ONNX model's real inputs, -1 for symbolic/unknown dimensions."""
    from ..onnx_io import load_model

    model = load_model(onnx_path, load_external_data=False)
    inits = {i.name for i in model.graph.initializer}
    out = []
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        dims = tuple(d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else -1
                     for d in vi.type.tensor_type.shape.dim)
        out.append((vi.name, dims))
    return out


def batch_profiles(inputs, batches, profiles):
    """Build profiles that cover ``batches`` on the first dimension of every input.

    ``inputs``: [(name, dims)] of the model; ``profiles``: explicit {name: (min, opt, max)}
    whose first dimension is replaced. Other dynamic dimensions need explicit shapes.
    """
    out = collections.OrderedDict(profiles)
    if not batches:
        return out
    lo, hi = min(batches), max(batches)
    for name, dims in inputs:
        if not dims:
            continue
        base = tuple(out[name][1]) if name in out else dims
        rest = base[1:]
        if any(d < 0 for d in rest):
            raise TrtSparseError("input {} has dynamic dimensions besides the batch ({}); give them with "
                                 "--shapes".format(name, "x".join(str(d) for d in dims)))
        if dims[0] >= 0 and (dims[0] != lo or lo != hi):
            raise TrtSparseError("input {} has a fixed batch of {}; --batch {} needs a model with a dynamic "
                                 "batch dimension".format(name, dims[0], ",".join(map(str, batches))))
        out[name] = ((lo,) + rest, (hi,) + rest, (hi,) + rest)
    return out


def run_shapes(runner_inputs, default_shapes, fixed, batch):
    """Shapes to run with: engine defaults, overridden by ``fixed`` (--shapes), batch set on dim 0."""
    shapes = collections.OrderedDict()
    for t in runner_inputs:
        shape = tuple(fixed.get(t.name, default_shapes[t.name]))
        if batch is not None and shape:
            shape = (batch,) + shape[1:]
        shapes[t.name] = shape
    return shapes


def make_inputs(runner, shapes, input_file, seed):
    """Inputs for ``runner``: from ``input_file`` or seeded random data of ``shapes``."""
    from ..runtime import load_inputs, random_inputs

    if input_file:
        return load_inputs(input_file, [t.name for t in runner.inputs])
    return random_inputs([(t.name, shapes[t.name], t.dtype) for t in runner.inputs], seed)


def _progress(total, desc, enabled):
    if not enabled:
        return contextlib.nullcontext(None)
    try:
        from tqdm import tqdm
    except ImportError:
        return contextlib.nullcontext(None)
    return tqdm(total=total, desc=desc, leave=False, file=sys.stderr)


def benchmark(engines, runner_factory, batches=None, fixed_shapes=None, input_file=None, seed=0,
              iterations=200, warmup=20, cuda_graph=False, layer_profile=True, rtol=1e-3, progress=True):
    """Run and time every engine; return (results, check, info).

    ``engines``: ordered {config name: engine}; ``runner_factory(engine)`` returns an
    object with the :class:`trt_sparse.runtime.EngineRunner` interface. The first
    config is the reference of the output check. Runners are used one at a time.
    """
    from ..runtime import compare_outputs, latency_stats, throughput

    fixed_shapes = fixed_shapes or {}
    results, outputs, info = [], collections.OrderedDict(), {}
    specs = None
    for cfg, engine in engines.items():
        runner = runner_factory(engine)
        try:
            spec = [(t.name, str(t.dtype)) for t in runner.inputs]
            if specs is None:
                specs = spec
            elif spec != specs:
                raise TrtSparseError("the {} engine's inputs {} differ from the {} engine's {}".format(
                    cfg, spec, next(iter(engines)), specs))
            info.setdefault("cuda_backend", getattr(getattr(runner, "cuda", None), "name", None))
            defaults = runner.default_input_shapes()
            for batch in (batches or [None]):
                shapes = run_shapes(runner.inputs, defaults, fixed_shapes, batch)
                inputs = make_inputs(runner, shapes, input_file, seed)
                first = next(iter(inputs.values())) if inputs else None
                real_batch = int(first.shape[0]) if first is not None and first.ndim else 1
                outputs[(cfg, real_batch)] = runner.infer(inputs)
                with _progress(iterations, "{} batch {}".format(cfg, real_batch), progress) as bar:
                    times = runner.time(inputs, iterations=iterations, warmup=warmup, cuda_graph=cuda_graph,
                                        progress=bar)
                stats = latency_stats(times)
                layers = runner.profile_layers(inputs) if layer_profile else []
                results.append(collections.OrderedDict([
                    ("config", cfg), ("engine", engine if isinstance(engine, str) else None),
                    ("batch", real_batch), ("input_shapes", {n: list(s) for n, s in shapes.items()}),
                    ("latency", stats), ("throughput_per_s", throughput(stats["median_ms"], real_batch)),
                    ("device_memory", runner.device_memory()),
                    ("build", _build_summary(getattr(runner, "metadata", None))),
                    ("layers", [[n, float(ms)] for n, ms in layers]),
                ]))
        finally:
            runner.close()
    check = None
    names = list(engines)
    if len(names) >= 2:
        ref, other = names[0], names[1]
        per_batch = collections.OrderedDict()
        ok = True
        for (cfg, batch), out in outputs.items():
            if cfg != ref or (other, batch) not in outputs:
                continue
            entry = compare_outputs(out, outputs[(other, batch)], rtol=rtol)
            per_batch[batch] = {"ok": entry["ok"], "outputs": entry["outputs"]}
            ok = ok and entry["ok"]
        check = collections.OrderedDict([("reference", ref), ("candidate", other), ("ok", ok), ("rtol", rtol),
                                         ("per_batch", per_batch)])
    return results, check, info


def _build_summary(meta):
    """The parts of an engine's build sidecar worth repeating in the report (None without one)."""
    if not meta:
        return None
    plugin = meta.get("plugin") or {}
    return collections.OrderedDict([
        ("tensorrt", meta.get("tensorrt")), ("precision", meta.get("precision")),
        ("strongly_typed", meta.get("strongly_typed")), ("shapes", meta.get("shapes")),
        ("sparse_conv_nodes", (meta.get("onnx") or {}).get("sparse_conv_nodes")),
        ("plugin_sha256", plugin.get("sha256")), ("build_seconds", meta.get("build_seconds")),
    ])


def _prepare_engines(args, trt_info):
    """{config: engine path}: given .engine files, or engines built from the .onnx models."""
    from ..engine import build_engine, make_profiles

    engines = collections.OrderedDict()
    tmpdir = None
    for cfg, path in (("dense", args.dense), ("sparse", args.sparse)):
        if not os.path.isfile(path):
            raise TrtSparseError("{} model {} does not exist".format(cfg, path))
        ext = os.path.splitext(path)[1].lower()
        if ext in ENGINE_EXTS:
            engines[cfg] = path
            continue
        if ext != ".onnx":
            raise TrtSparseError("{} model {}: expected an .onnx model or an .engine file".format(cfg, path))
        out_dir = args.engine_dir
        if out_dir is None:
            tmpdir = tmpdir or tempfile.mkdtemp(prefix="trt-sparse-bench-")
            out_dir = tmpdir
        profiles = make_profiles(shapes=args.shapes, min_shapes=args.min_shapes, opt_shapes=args.opt_shapes,
                                 max_shapes=args.max_shapes)
        profiles = batch_profiles(onnx_inputs(path), parse_batches(args.batch), profiles)
        kwargs = build_kwargs(args)
        if cfg == "dense":
            kwargs["plugin_lib"] = args.plugin  # found automatically only if the model needs it
        target = os.path.join(out_dir, "{}_{}.engine".format(cfg, kwargs["precision"]))
        print("building the {} engine from {} ...".format(cfg, path), file=sys.stderr)
        result = build_engine(path, shapes=profiles, save_path=target, **kwargs)
        trt_info.update(result.metadata["tensorrt"])
        engines[cfg] = target
    return engines, tmpdir


def run(args):
    from .. import bench_report, trt_loader
    from ..engine import parse_shape_spec
    from ..runtime import EngineRunner, select_backend

    for path in args.report:
        if os.path.splitext(path)[1].lower() not in bench_report.REPORT_FORMATS:
            raise TrtSparseError("--report {}: use a .json or .md file name".format(path))
    if args.iterations < 1 or args.warmup < 0:
        raise TrtSparseError("--iterations must be >= 1 and --warmup >= 0")
    batches = parse_batches(args.batch)
    if batches and args.inputs:
        raise TrtSparseError("--batch and --inputs exclude each other (the input file fixes the batch)")
    precision = "fp16" if args.fp16 else "fp32"
    if args.rtol is not None:
        rtol = args.rtol
    else:
        rtol, why = default_rtol(precision, tf32_node_count(args.sparse) if os.path.isfile(args.sparse) else 0)
        if rtol != DEFAULT_RTOL[precision]:
            print("output check: rtol {:g} ({})".format(rtol, why), file=sys.stderr)
    trt = trt_loader.import_tensorrt(args.trt_backend)
    if trt_loader.rtx_needs_reexec(trt) and _started_as_cli():
        # TensorRT-RTX needs libtensorrt_rtx.so on LD_LIBRARY_PATH from process start for plugin
        # layers (build and run): restart this command once with it set
        trt_loader.reexec_with_rtx_library_path()
    # fail before spending minutes on builds when nothing can run the engines
    select_backend(args.cuda_backend, args.device).close()

    trt_info = {"flavour": trt_loader.flavour(trt), "version": str(trt.__version__)}
    engines, tmpdir = _prepare_engines(args, trt_info)
    try:
        fixed = parse_shape_spec(args.shapes) if args.shapes else {}
        from ..runtime import device_info

        device = device_info(args.device)

        def factory(engine):
            return EngineRunner(engine, plugin_lib=args.plugin, backend=args.cuda_backend,
                                trt_backend=args.trt_backend, device=args.device, verbose=args.verbose)

        results, check, info = benchmark(
            engines, factory, batches=batches, fixed_shapes=fixed, input_file=args.inputs, seed=args.seed,
            iterations=args.iterations, warmup=args.warmup, cuda_graph=args.cuda_graph,
            layer_profile=not args.no_layer_profile, rtol=rtol, progress=not args.no_progress)
    finally:
        if tmpdir:
            shutil.rmtree(tmpdir, ignore_errors=True)
    meta = bench_report.make_meta(
        tensorrt=trt_info, device=device, cuda_backend=info.get("cuda_backend"), precision=precision,
        iterations=args.iterations, warmup=args.warmup, cuda_graph=args.cuda_graph, seed=args.seed,
        inputs=args.inputs or "random (seed {})".format(args.seed),
        models={"dense": os.path.abspath(args.dense), "sparse": os.path.abspath(args.sparse)})
    report = bench_report.make_report(meta, results, check)
    print(summary_text(report))
    for path in args.report:
        bench_report.write_report(report, path)
        print("wrote {}".format(path))
    if args.plot:
        bench_report.plot_latency(report, args.plot)
        print("wrote {}".format(args.plot))
    if check is not None and not check["ok"]:
        print("trt-sparse bench: outputs of the sparse engine differ from the dense engine beyond rtol {}".format(
            rtol), file=sys.stderr)
        return 1
    return 0


def _started_as_cli():
    """True in a ``trt-sparse`` / ``python -m trt_sparse`` process (not when called from Python code)."""
    name = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    return name in ("trt-sparse", "__main__.py")


def summary_text(report):
    """A few lines for the terminal: latency per config/batch and the speedup."""
    lines = []
    for r in report["results"]:
        lat = r["latency"]
        lines.append("{:<7} batch {:<4} median {:.3f} ms  p99 {:.3f} ms  {:.1f}/s".format(
            r["config"], r["batch"], lat["median_ms"], lat["p99_ms"], r["throughput_per_s"]))
    for s in report["speedup"]:
        lines.append("speedup batch {}: {:.2f}x (median)".format(s["batch"], s["median"]))
    return "\n".join(lines)
