"""Build TensorRT engines from ONNX models (TensorRT 8.x, 10.x, 11.x and TensorRT-RTX).

:func:`build_engine` is the one entry point. Differences between TensorRT
majors handled here:

* network creation: 8.x needs the EXPLICIT_BATCH flag; 10.x ignores it; 11.x and
  TensorRT-RTX have no flag (networks are always strongly typed);
* precision: 8.x/10.x use weak typing (builder flag FP16, TF32 on by default and
  cleared with ``tf32=False``); 11.x/RTX are strongly typed, so ``fp16`` converts
  the ONNX model to fp16 first (:mod:`trt_sparse.precision`, I/O kept float32);
* workspace: ``max_workspace_size`` before 8.4, ``set_memory_pool_limit`` after;
* plugin library: ``ctypes`` + ``init_libnvinfer_plugins`` on 8.x, the plugin
  registry's ``load_library`` on >= 10 (see :mod:`trt_sparse.trt_loader`);
* TensorRT-RTX needs ``libtensorrt_rtx.so`` on LD_LIBRARY_PATH at process start to
  add plugin layers: the build then runs in a child process with that path set.

Every parser error is reported with the ONNX node's name and op type. The engine
is written atomically with a JSON sidecar ``<engine>.json``.
"""
import collections
import datetime
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time

from . import PLUGIN_NAME, __version__, trt_loader
from .errors import TrtSparseError

PRECISIONS = ("fp32", "fp16")

BuildResult = collections.namedtuple("BuildResult", "path engine metadata")
BuildResult.__doc__ = "path: saved engine or None; engine: serialized bytes; metadata: sidecar dict."


# ---------------------------------------------------------------- shape profiles

_DIMS_RE = re.compile(r"^\d+(x\d+)*$")


def parse_dims(text, what="shape"):
    """``"1x3x224x224"`` -> (1, 3, 224, 224); raises TrtSparseError naming ``what``."""
    text = text.strip().lower()
    if not _DIMS_RE.match(text):
        raise TrtSparseError("bad {} {!r}: expected dimensions like 1x3x224x224".format(what, text))
    dims = tuple(int(d) for d in text.split("x"))
    if any(d < 1 for d in dims):
        raise TrtSparseError("bad {} {!r}: every dimension must be >= 1".format(what, text))
    return dims


def parse_shape_spec(spec):
    """Parse ``"name:1x3x224x224,other:1x10"`` (trtexec --shapes syntax) into an ordered dict.

    The name is everything before the last ``:`` so names such as ``input:0`` work.
    """
    out = collections.OrderedDict()
    if spec is None:
        return out
    for item in (s for s in spec.split(",") if s.strip()):
        name, sep, dims = item.strip().rpartition(":")
        if not sep or not name:
            raise TrtSparseError("bad shape {!r}: expected NAME:DIMS, e.g. input:1x3x224x224".format(item.strip()))
        if name in out:
            raise TrtSparseError("input {} is given twice in {!r}".format(name, spec))
        out[name] = parse_dims(dims, "shape of input {}".format(name))
    return out


def make_profiles(shapes=None, min_shapes=None, opt_shapes=None, max_shapes=None):
    """Merge fixed shapes and min/opt/max shapes into ``{name: (min, opt, max)}``.

    Each argument is a dict name -> dims or a spec string (:func:`parse_shape_spec`).
    ``shapes`` values may also be (min, opt, max) triples. An input named in
    ``min_shapes``/``max_shapes`` needs all three of min, opt and max (opt alone is
    allowed: min = opt = max). Checks ranks and min <= opt <= max.
    """
    def as_dict(value):
        return parse_shape_spec(value) if isinstance(value, str) or value is None else collections.OrderedDict(value)

    shapes, mins, opts, maxs = (as_dict(v) for v in (shapes, min_shapes, opt_shapes, max_shapes))
    profiles = collections.OrderedDict()
    for name, dims in shapes.items():
        if name in mins or name in opts or name in maxs:
            raise TrtSparseError("input {} has both a fixed shape and min/opt/max shapes".format(name))
        if len(dims) == 3 and all(isinstance(d, (tuple, list)) for d in dims):
            profiles[name] = tuple(tuple(int(x) for x in d) for d in dims)
        else:
            dims = tuple(int(x) for x in dims)
            profiles[name] = (dims, dims, dims)
    for name in list(mins) + [n for n in opts if n not in mins] + [n for n in maxs if n not in mins and n not in opts]:
        if name in profiles:
            continue
        have = [name in mins, name in opts, name in maxs]
        if have == [False, True, False]:
            profiles[name] = (opts[name],) * 3
            continue
        if not all(have):
            missing = [k for k, h in zip(("min", "opt", "max"), have) if not h]
            raise TrtSparseError("input {} needs {} shapes too".format(name, "/".join(missing)))
        profiles[name] = (tuple(mins[name]), tuple(opts[name]), tuple(maxs[name]))
    for name, (lo, mid, hi) in profiles.items():
        if not (len(lo) == len(mid) == len(hi)):
            raise TrtSparseError("input {}: min/opt/max shapes have different ranks".format(name))
        if any(d < 1 for d in lo + mid + hi):
            raise TrtSparseError("input {}: every dimension must be >= 1".format(name))
        if not all(a <= b <= c for a, b, c in zip(lo, mid, hi)):
            raise TrtSparseError(
                "input {}: need min <= opt <= max in every dimension, got {} / {} / {}".format(
                    name, format_dims(lo), format_dims(mid), format_dims(hi)
                )
            )
    return profiles


def format_dims(dims):
    """(1, 3, 224, 224) -> ``"1x3x224x224"`` (-1 for a dynamic dimension)."""
    return "x".join(str(int(d)) for d in dims)


def resolve_profiles(inputs, profiles, warn=None):
    """Match shape profiles to the network inputs; return ``{name: (min, opt, max)}`` for dynamic inputs.

    ``inputs`` is a list of (name, dims) with -1 (or None) for dynamic dimensions.
    Unknown names and mismatches with static dimensions raise TrtSparseError; a
    dynamic input without a profile gets 1 for its dynamic dimensions (like
    trtexec), reported through ``warn(message)``.
    """
    known = collections.OrderedDict((name, tuple(-1 if d is None else int(d) for d in dims)) for name, dims in inputs)
    unknown = [n for n in profiles if n not in known]
    if unknown:
        raise TrtSparseError(
            "no network input named {} (inputs: {})".format(", ".join(unknown), ", ".join(known) or "none")
        )
    resolved = collections.OrderedDict()
    for name, dims in known.items():
        dynamic = any(d < 0 for d in dims)
        if name in profiles:
            prof = profiles[name]
            names = ("",) * 3 if prof[0] == prof[1] == prof[2] else ("min ", "opt ", "max ")
            for which, shape in zip(names, prof):
                if len(shape) != len(dims):
                    raise TrtSparseError(
                        "input {} has rank {} ({}), the {}shape {} has rank {}".format(
                            name, len(dims), format_dims(dims), which, format_dims(shape), len(shape)
                        )
                    )
                for axis, (want, got) in enumerate(zip(dims, shape)):
                    if want >= 0 and want != got:
                        raise TrtSparseError(
                            "input {} dimension {} is fixed to {} in the model, the {}shape asks {}".format(
                                name, axis, want, which, got
                            )
                        )
            if dynamic:
                resolved[name] = tuple(tuple(s) for s in prof)
        elif dynamic:
            fixed = tuple(1 if d < 0 else d for d in dims)
            if warn:
                warn(
                    "input {} has dynamic shape {}; using {} (set it with --shapes or --min/opt/max-shapes)".format(
                        name, format_dims(dims), format_dims(fixed)
                    )
                )
            resolved[name] = (fixed, fixed, fixed)
    return resolved


# ---------------------------------------------------------------- logging / progress

def _make_logger(trt, verbose=False, stream=None):
    """A TensorRT ILogger printing warnings (or everything when verbose) and remembering errors."""
    stream = stream or sys.stderr
    severity = trt.ILogger.Severity if hasattr(trt.ILogger, "Severity") else trt.Logger.Severity
    errors_levels = {severity.INTERNAL_ERROR, severity.ERROR}
    shown = {severity.INTERNAL_ERROR, severity.ERROR, severity.WARNING}
    if verbose:
        shown |= {severity.INFO, severity.VERBOSE}

    class _Logger(trt.ILogger):
        def __init__(self):
            trt.ILogger.__init__(self)
            self.errors = []

        def log(self, sev, msg):
            if sev in errors_levels:
                self.errors.append(msg)
            if sev in shown:
                stream.write("[TensorRT] {}: {}\n".format(str(sev).split(".")[-1], msg))

    return _Logger()


def _make_progress_monitor(trt):
    """tqdm progress bars for the top-level build phases (TensorRT >= 10 / RTX), else None."""
    if not hasattr(trt, "IProgressMonitor"):
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None

    class _Monitor(trt.IProgressMonitor):
        def __init__(self):
            trt.IProgressMonitor.__init__(self)
            self.bars = {}

        def phase_start(self, phase_name, parent_phase, num_steps):
            if parent_phase is None and num_steps > 0:
                self.bars[phase_name] = tqdm(total=num_steps, desc=phase_name, leave=False, file=sys.stderr)

        def step_complete(self, phase_name, step):
            bar = self.bars.get(phase_name)
            if bar is not None:
                bar.update(1)
            return True

        def phase_finish(self, phase_name):
            bar = self.bars.pop(phase_name, None)
            if bar is not None:
                bar.close()

    return _Monitor()


# ---------------------------------------------------------------- parser errors

def parser_error_lines(parser, onnx_nodes=()):
    """One line per parser error: ``node NAME (OpType): description``.

    TensorRT >= 10 reports node names itself; for 8.x the node index is mapped
    through ``onnx_nodes`` (the model's graph nodes, in order).
    """
    lines = []
    for i in range(parser.num_errors):
        err = parser.get_error(i)
        desc = err.desc()
        name = op = None
        if hasattr(err, "node_name"):
            try:
                name, op = err.node_name() or None, err.node_operator() or None
            except Exception:
                name = op = None
        index = err.node() if hasattr(err, "node") else -1
        if name is None and 0 <= index < len(onnx_nodes):
            node = onnx_nodes[index]
            name, op = node.name or "#{}".format(index), node.op_type
        if name is None and op is None:
            lines.append(desc if index < 0 else "node #{}: {}".format(index, desc))
        else:
            lines.append("node {} ({}): {}".format(name or "#{}".format(index), op or "?", desc))
    return lines


# ---------------------------------------------------------------- helpers

def _atomic_write_bytes(path, data):
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


def _umask():
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_json_atomic(path, obj):
    """Write ``obj`` as indented JSON to ``path`` atomically."""
    _atomic_write_bytes(path, (json.dumps(obj, indent=2, sort_keys=False) + "\n").encode("utf-8"))


def sidecar_path(engine_path):
    """``model.engine`` -> ``model.engine.json``."""
    return engine_path + ".json"


def read_sidecar(engine_path):
    """The sidecar dict of an engine, or None when it has none (or it is unreadable)."""
    try:
        with open(sidecar_path(engine_path)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def _dtype_name(dt):
    return str(dt).split(".")[-1].lower()


def _network_io(network):
    ins = [network.get_input(i) for i in range(network.num_inputs)]
    outs = [network.get_output(i) for i in range(network.num_outputs)]
    return ([(t.name, tuple(t.shape), _dtype_name(t.dtype)) for t in ins],
            [(t.name, tuple(t.shape), _dtype_name(t.dtype)) for t in outs])


def _device_info():
    try:
        from .runtime import device_info
    except ImportError:  # pragma: no cover - runtime is part of the package
        return {"name": None}
    return device_info()


def _count_plugin_nodes(model):
    return sum(1 for n in model.graph.node if n.op_type == PLUGIN_NAME)


def _count_tf32_nodes(model):
    """SparseConv2d nodes with allow_tf32 = 1 (validated: a value the plugin refuses raises, naming the node)."""
    from .onnx_io import tf32_layers

    return len(tf32_layers(model, PLUGIN_NAME))


def _needs_child_process(trt, plugin_lib):
    return plugin_lib is not None and trt_loader.flavour(trt) == "tensorrt-rtx" and trt_loader.rtx_needs_reexec(trt)


def _apply_workspace(trt, config, workspace):
    if workspace is None:
        return
    if hasattr(config, "set_memory_pool_limit"):
        config.set_memory_pool_limit(trt.MemoryPoolType.WORKSPACE, int(workspace))
    else:  # TensorRT < 8.4
        config.max_workspace_size = int(workspace)


def parse_size(text):
    """``"1G"``, ``"512M"``, ``"4096"`` (bytes) -> int bytes; TrtSparseError when malformed."""
    m = re.match(r"^\s*(\d+(?:\.\d+)?)\s*([kKmMgG]?)(?:i?[bB])?\s*$", str(text))
    if not m:
        raise TrtSparseError("bad size {!r}: expected bytes or a number with K, M or G".format(text))
    scale = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[m.group(2).lower()]
    value = int(float(m.group(1)) * scale)
    if value < 1:
        raise TrtSparseError("bad size {!r}: must be positive".format(text))
    return value


# ---------------------------------------------------------------- build

def build_engine(onnx_path, plugin_lib=None, precision="fp32", shapes=None, workspace=None,
                 timing_cache=None, save_path=None, tf32=True, strongly_typed=None,
                 compute_capabilities=None, backend="auto", verbose=False, progress=True):
    """Build a serialized TensorRT engine from an ONNX model; return a :class:`BuildResult`.

    ``plugin_lib``: SparseConv2d plugin library (default: :func:`trt_loader.find_plugin_library`
    when the model has SparseConv2d nodes). ``precision``: ``"fp32"`` or ``"fp16"``.
    ``shapes``: ``{input: (min, opt, max)}`` or anything :func:`make_profiles` accepts
    as fixed shapes. ``workspace``: bytes. ``timing_cache``: file read if present and
    written back after the build. ``save_path``: write the engine and its JSON sidecar.
    ``tf32=False`` disables TF32 (weakly typed builds). ``strongly_typed``: None = what
    the TensorRT version requires (always for 11.x/RTX), True = strongly typed on 10.x too.
    ``compute_capabilities``: TensorRT-RTX targets, e.g. ``["SM86", "SM89"]``.
    """
    from .onnx_io import load_model

    if precision not in PRECISIONS:
        raise TrtSparseError("unknown precision {!r} (choose fp32 or fp16)".format(precision))
    onnx_path = os.fspath(onnx_path)
    if save_path is not None:
        save_path = os.fspath(save_path)
        if os.path.abspath(save_path) == os.path.abspath(onnx_path):
            raise TrtSparseError("refusing to overwrite the input model {} with the engine".format(onnx_path))
    model = load_model(onnx_path, load_external_data=False)
    n_plugin = _count_plugin_nodes(model)
    n_tf32 = _count_tf32_nodes(model)
    if plugin_lib is None and n_plugin:
        plugin_lib = trt_loader.find_plugin_library()
        if plugin_lib is None:
            raise TrtSparseError(trt_loader.plugin_missing_message())
    elif plugin_lib is not None:
        plugin_lib = trt_loader.find_plugin_library(plugin_lib)
    if isinstance(shapes, str) or (shapes and not all(
            len(v) == 3 and all(isinstance(d, (tuple, list)) for d in v) for v in dict(shapes).values())):
        shapes = make_profiles(shapes=shapes)
    shapes = collections.OrderedDict(shapes or {})

    trt = trt_loader.import_tensorrt(backend)
    if _needs_child_process(trt, plugin_lib):
        return _build_in_child(onnx_path, plugin_lib, precision, shapes, workspace, timing_cache, save_path,
                               tf32, strongly_typed, compute_capabilities, backend, verbose, progress)

    version = trt_loader.version_tuple(trt)
    flavour = trt_loader.flavour(trt)
    strong_only = trt_loader.is_strongly_typed_only(trt)
    if strongly_typed is None:
        strongly_typed = strong_only
    elif not strongly_typed and strong_only:
        raise TrtSparseError("{} {} builds strongly typed networks only".format(flavour, trt.__version__))
    if strongly_typed and not strong_only and not hasattr(trt.NetworkDefinitionCreationFlag, "STRONGLY_TYPED"):
        raise TrtSparseError("TensorRT {} has no strongly typed networks (needs >= 9.1)".format(trt.__version__))

    logger = _make_logger(trt, verbose=verbose)
    builder = trt.Builder(logger)
    if plugin_lib is not None:
        registry = builder.get_plugin_registry() if hasattr(builder, "get_plugin_registry") else None
        trt_loader.load_plugin_library(trt, plugin_lib, logger=logger, registry=registry)

    flags = 0
    if strongly_typed and not strong_only:
        flags |= 1 << int(trt.NetworkDefinitionCreationFlag.STRONGLY_TYPED)
    if version[0] < 10 and flavour == "tensorrt":
        flags |= 1 << int(trt.NetworkDefinitionCreationFlag.EXPLICIT_BATCH)
    network = builder.create_network(flags)
    parser = trt.OnnxParser(network, logger)

    fp16_stats = None
    t0 = time.time()
    if precision == "fp16" and strongly_typed:
        from .precision import convert_to_fp16, has_float16

        full = load_model(onnx_path, load_external_data=True)
        if has_float16(full):
            ok = parser.parse_from_file(onnx_path)
        else:
            full, fp16_stats = convert_to_fp16(full, keep_io_types=True)
            model = full
            ok = _parse_model_proto(parser, full, onnx_path)
    else:
        ok = parser.parse_from_file(onnx_path)
    if not ok or parser.num_errors:
        lines = parser_error_lines(parser, list(model.graph.node)) or logger.errors or ["unknown parser error"]
        raise TrtSparseError("TensorRT's ONNX parser failed on {}: {}".format(onnx_path, "; ".join(lines)))
    parse_s = time.time() - t0
    inputs, outputs = _network_io(network)

    config = builder.create_builder_config()
    _apply_workspace(trt, config, workspace)
    if precision == "fp16" and not strongly_typed:
        if hasattr(builder, "platform_has_fast_fp16") and not builder.platform_has_fast_fp16:
            sys.stderr.write("warning: this GPU has no fast fp16; the fp16 engine may be slower than fp32\n")
        config.set_flag(trt.BuilderFlag.FP16)
    if not tf32 and hasattr(trt.BuilderFlag, "TF32"):
        config.clear_flag(trt.BuilderFlag.TF32)
    if compute_capabilities:
        if not hasattr(config, "set_compute_capability"):
            raise TrtSparseError("--compute-capability is a TensorRT-RTX option; {} has none".format(flavour))
        config.num_compute_capabilities = len(compute_capabilities)
        for i, cc in enumerate(compute_capabilities):
            try:
                value = getattr(trt.ComputeCapability, str(cc).upper())
            except AttributeError:
                raise TrtSparseError("unknown compute capability {!r} (choose from {})".format(
                    cc, ", ".join(trt.ComputeCapability.__members__)))
            config.set_compute_capability(value, i)

    warnings_seen = []
    resolved = resolve_profiles([(n, s) for n, s, _ in inputs], shapes, warn=warnings_seen.append)
    for w in warnings_seen:
        sys.stderr.write("warning: {}\n".format(w))
    if resolved:
        profile = builder.create_optimization_profile()
        for name, (lo, mid, hi) in resolved.items():
            profile.set_shape(name, lo, mid, hi)
        config.add_optimization_profile(profile)

    cache = None
    if timing_cache is not None and hasattr(config, "create_timing_cache"):
        blob = b""
        if os.path.isfile(timing_cache):
            with open(timing_cache, "rb") as f:
                blob = f.read()
        cache = config.create_timing_cache(blob)
        config.set_timing_cache(cache, False)

    monitor = _make_progress_monitor(trt) if progress else None
    if monitor is not None and hasattr(config, "progress_monitor"):
        config.progress_monitor = monitor

    t1 = time.time()
    serialized = builder.build_serialized_network(network, config)
    build_s = time.time() - t1
    if serialized is None:
        raise TrtSparseError("TensorRT could not build the engine for {}: {}".format(
            onnx_path, "; ".join(logger.errors[-5:]) or "see the log above"))
    engine = bytes(memoryview(serialized))

    if cache is not None:
        _atomic_write_bytes(timing_cache, bytes(memoryview(config.get_timing_cache().serialize())))

    metadata = collections.OrderedDict([
        ("trt_sparse_version", __version__),
        ("created", datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")),
        ("host", platform.node()),
        ("tensorrt", {"flavour": flavour, "version": str(trt.__version__), "module": trt.__name__}),
        ("onnx", {"path": os.path.abspath(onnx_path), "sha256": trt_loader.file_sha256(onnx_path),
                  "sparse_conv_nodes": n_plugin, "allow_tf32_nodes": n_tf32}),
        ("precision", precision),
        ("strongly_typed", bool(strongly_typed)),
        ("tf32", bool(tf32)),
        ("fp16_conversion", dict(fp16_stats._asdict()) if fp16_stats else None),
        ("shapes", {n: [list(s) for s in p] for n, p in resolved.items()}),
        ("inputs", [{"name": n, "shape": list(s), "dtype": d} for n, s, d in inputs]),
        ("outputs", [{"name": n, "shape": list(s), "dtype": d} for n, s, d in outputs]),
        ("workspace", workspace),
        ("compute_capabilities", list(compute_capabilities) if compute_capabilities else None),
        ("plugin", {"path": plugin_lib, "sha256": trt_loader.file_sha256(plugin_lib)} if plugin_lib else None),
        ("device", _device_info()),
        ("parse_seconds", round(parse_s, 3)),
        ("build_seconds", round(build_s, 3)),
        ("engine_bytes", len(engine)),
    ])
    if save_path is not None:
        _atomic_write_bytes(save_path, engine)
        write_json_atomic(sidecar_path(save_path), metadata)
    return BuildResult(save_path, engine, metadata)


def _parse_model_proto(parser, model, onnx_path):
    """Parse an in-memory ModelProto (embedding its weights; > 2 GB goes through a temp dir)."""
    if model.ByteSize() < (1 << 31) - (1 << 26):
        return parser.parse(model.SerializeToString(), os.path.abspath(onnx_path))
    from .onnx_io import save_model_atomic

    with tempfile.TemporaryDirectory(prefix="trt-sparse-") as tmp:
        path = os.path.join(tmp, "model_fp16.onnx")
        save_model_atomic(model, path, external_data=True)
        return parser.parse_from_file(path)


# ---------------------------------------------------------------- child process (TensorRT-RTX + plugin)

def _build_in_child(onnx_path, plugin_lib, precision, shapes, workspace, timing_cache, save_path,
                    tf32, strongly_typed, compute_capabilities, backend, verbose, progress):
    """Run build_engine in ``python -m trt_sparse.engine`` with libtensorrt_rtx.so on LD_LIBRARY_PATH."""
    with tempfile.TemporaryDirectory(prefix="trt-sparse-build-") as tmp:
        target = save_path or os.path.join(tmp, "model.engine")
        request = {
            "onnx_path": os.path.abspath(onnx_path), "plugin_lib": plugin_lib, "precision": precision,
            "shapes": {n: [list(s) for s in p] for n, p in shapes.items()}, "workspace": workspace,
            "timing_cache": timing_cache, "save_path": os.path.abspath(target), "tf32": tf32,
            "strongly_typed": strongly_typed, "compute_capabilities": compute_capabilities,
            "backend": "rtx", "verbose": verbose, "progress": progress,
        }
        req_path = os.path.join(tmp, "request.json")
        err_path = os.path.join(tmp, "error.txt")
        with open(req_path, "w") as f:
            json.dump(request, f)
        env = trt_loader.rtx_env()
        env[trt_loader.ENV_REEXEC] = "1"
        proc = subprocess.run([sys.executable, "-m", "trt_sparse.engine", req_path, err_path], env=env)
        if proc.returncode != 0:
            message = ""
            if os.path.exists(err_path):
                with open(err_path) as f:
                    message = f.read().strip()
            if not message:
                message = "the TensorRT-RTX build process exited with status {}".format(proc.returncode)
            raise TrtSparseError(message)
        with open(target, "rb") as f:
            engine = f.read()
        with open(sidecar_path(target)) as f:
            metadata = json.load(f, object_pairs_hook=collections.OrderedDict)
        return BuildResult(save_path, engine, metadata)


def _child_main(argv):
    req_path, err_path = argv
    with open(req_path) as f:
        req = json.load(f)
    req["shapes"] = {n: tuple(tuple(s) for s in p) for n, p in req["shapes"].items()}
    try:
        build_engine(**req)
    except TrtSparseError as exc:
        with open(err_path, "w") as f:
            f.write(str(exc))
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(_child_main(sys.argv[1:]))
