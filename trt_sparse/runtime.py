"""Run and time TensorRT engines.

* CUDA backend: **cuda-python** (``cuda.bindings.runtime``, or ``cuda.cudart`` of
  cuda-python < 12.6) first, **pycuda** as the alternative; :func:`select_backend`
  picks automatically and the choice is reported (``backend.name``).
* TensorRT API: name-based tensors (``num_io_tensors``, ``set_input_shape``,
  ``set_tensor_address``, ``execute_async_v3``; TensorRT >= 8.5, 10.x, 11.x, RTX)
  or binding indices (``num_bindings``, ``set_binding_shape``,
  ``execute_async_v2``; TensorRT 8.2/8.4).
* Timing: CUDA events around every enqueue after a warm-up (GPU time of the
  engine alone: inputs are copied once, before timing), optionally replaying a
  captured CUDA graph; statistics by :func:`latency_stats`.
* Inputs: ``.npy`` (one-input engines) / ``.npz`` (arrays named like the inputs)
  or seeded random data (:func:`random_inputs`).
"""
import collections
import importlib
import os
import sys

import numpy as np

from . import trt_loader
from .errors import TrtSparseError

BACKEND_ORDER = ("cuda-python", "pycuda")

TensorInfo = collections.namedtuple("TensorInfo", "name is_input dtype shape profile")
TensorInfo.__doc__ = ("name; is_input; dtype (numpy); shape (engine shape, -1 = dynamic); "
                      "profile ((min, opt, max) for dynamic inputs, else None)")


# ---------------------------------------------------------------- statistics

def latency_stats(times_ms):
    """Summary of per-iteration latencies in ms: n, mean, std, min, median, p90, p95, p99, max.

    Percentiles use numpy's default linear interpolation.
    """
    arr = np.asarray(times_ms, dtype=np.float64)
    if arr.size == 0:
        raise ValueError("no latency samples")
    if not np.isfinite(arr).all():
        raise ValueError("latency samples must be finite")
    p = np.percentile(arr, [50, 90, 95, 99])
    return collections.OrderedDict([
        ("n", int(arr.size)), ("mean_ms", float(arr.mean())), ("std_ms", float(arr.std())),
        ("min_ms", float(arr.min())), ("median_ms", float(p[0])), ("p90_ms", float(p[1])),
        ("p95_ms", float(p[2])), ("p99_ms", float(p[3])), ("max_ms", float(arr.max())),
    ])


def throughput(median_ms, batch):
    """Samples per second for one enqueue of ``batch`` samples taking ``median_ms``."""
    if median_ms <= 0:
        raise ValueError("latency must be positive")
    return batch * 1000.0 / median_ms


# ---------------------------------------------------------------- inputs

def random_inputs(specs, seed=0):
    """Seeded random inputs ``{name: array}`` for ``specs`` = [(name, shape, numpy dtype)].

    Floats: standard normal; integers: uniform in [0, 10); bool: fair coin.
    The same seed and specs always give the same arrays.
    """
    rng = np.random.default_rng(seed)
    out = collections.OrderedDict()
    for name, shape, dtype in specs:
        dtype = np.dtype(dtype)
        shape = tuple(int(d) for d in shape)
        if any(d < 0 for d in shape):
            raise TrtSparseError("input {} has unresolved dynamic shape {}; give --shapes".format(name, shape))
        if dtype.kind == "f":
            out[name] = rng.standard_normal(shape).astype(dtype)
        elif dtype.kind in "iu":
            out[name] = rng.integers(0, 10, size=shape).astype(dtype)
        elif dtype.kind == "b":
            out[name] = rng.random(shape) < 0.5
        else:
            raise TrtSparseError("input {}: cannot make random data of type {}".format(name, dtype))
    return out


def load_inputs(path, input_names):
    """Load inputs from ``.npy`` (engine with one input) or ``.npz`` (arrays named after the inputs)."""
    if not os.path.isfile(path):
        raise TrtSparseError("input file {} does not exist".format(path))
    try:
        data = np.load(path, allow_pickle=False)
    except (ValueError, OSError) as exc:
        raise TrtSparseError("cannot read inputs from {}: {}".format(path, exc))
    input_names = list(input_names)
    if isinstance(data, np.ndarray):
        if len(input_names) != 1:
            raise TrtSparseError(
                "{} holds one array but the engine has {} inputs ({}); use an .npz with one array per input".format(
                    path, len(input_names), ", ".join(input_names)))
        return collections.OrderedDict([(input_names[0], data)])
    with data:
        missing = [n for n in input_names if n not in data.files]
        if missing:
            raise TrtSparseError("{} has no array for input(s) {} (it has: {})".format(
                path, ", ".join(missing), ", ".join(data.files) or "nothing"))
        extra = [n for n in data.files if n not in input_names]
        if extra:
            raise TrtSparseError("{} has arrays {} that are not engine inputs ({})".format(
                path, ", ".join(extra), ", ".join(input_names)))
        return collections.OrderedDict((n, data[n]) for n in input_names)


def check_input(info, array):
    """Return ``array`` cast to the input's dtype; TrtSparseError for a wrong rank/shape or unsafe cast."""
    array = np.asarray(array)
    if array.ndim != len(info.shape):
        raise TrtSparseError("input {} needs rank {} ({}), got shape {}".format(
            info.name, len(info.shape), info.shape, array.shape))
    for axis, (want, got) in enumerate(zip(info.shape, array.shape)):
        if want >= 0 and want != got:
            raise TrtSparseError("input {} dimension {} must be {}, got {}".format(info.name, axis, want, got))
    if info.profile is not None:
        lo, _, hi = info.profile
        if not all(a <= d <= b for a, d, b in zip(lo, array.shape, hi)):
            raise TrtSparseError("input {} shape {} is outside the engine's profile {} .. {}".format(
                info.name, tuple(array.shape), tuple(lo), tuple(hi)))
    dtype = np.dtype(info.dtype)
    if array.dtype != dtype:
        if not (np.can_cast(array.dtype, dtype, "same_kind")):
            raise TrtSparseError("input {} needs {}, got {}".format(info.name, dtype, array.dtype))
        array = array.astype(dtype)
    return np.ascontiguousarray(array)


def compare_outputs(reference, candidate, rtol=1e-3):
    """Compare two ``{name: array}`` dicts; return {name: {max_abs, max_rel, ok}} plus overall ``ok``.

    Outputs are matched by name, or by position when the names differ but the
    counts agree. ``max_rel`` = max |a - b| / max |a| (scale relative, robust to
    zeros); ``ok`` means max_rel <= rtol and equal shapes.
    """
    ref_names, cand_names = list(reference), list(candidate)
    if set(ref_names) == set(cand_names):
        pairs = [(n, n) for n in ref_names]
    elif len(ref_names) == len(cand_names):
        pairs = list(zip(ref_names, cand_names))
    else:
        raise TrtSparseError("the engines have different outputs: {} vs {}".format(
            ", ".join(ref_names), ", ".join(cand_names)))
    result = collections.OrderedDict()
    all_ok = True
    for rn, cn in pairs:
        a = np.asarray(reference[rn], dtype=np.float64)
        b = np.asarray(candidate[cn], dtype=np.float64)
        if a.shape != b.shape:
            result[rn] = {"max_abs": None, "max_rel": None, "ok": False,
                          "error": "shape {} vs {}".format(a.shape, b.shape)}
            all_ok = False
            continue
        diff = np.abs(a - b)
        max_abs = float(diff.max()) if diff.size else 0.0
        scale = float(np.abs(a).max()) if a.size else 0.0
        max_rel = max_abs / scale if scale > 0 else (0.0 if max_abs == 0 else float("inf"))
        finite = bool(np.isfinite(b).all())
        ok = finite and max_rel <= rtol
        all_ok = all_ok and ok
        result[rn] = {"max_abs": max_abs, "max_rel": max_rel, "ok": ok}
        if not finite:
            result[rn]["error"] = "non-finite values"
    return {"ok": all_ok, "rtol": rtol, "outputs": result}


# ---------------------------------------------------------------- CUDA backends

class _CudaPython:
    """cuda-python runtime API (cuda.bindings.runtime, or cuda.cudart before 12.6)."""

    name = "cuda-python"

    def __init__(self, device=0):
        try:
            self.rt = importlib.import_module("cuda.bindings.runtime")
        except ImportError:
            self.rt = importlib.import_module("cuda.cudart")
        self._check(self.rt.cudaSetDevice(int(device)), "cudaSetDevice({})".format(device))
        self.device = int(device)

    def _check(self, result, what):
        err = result[0] if isinstance(result, tuple) else result
        if int(err) != 0:
            msg = self.rt.cudaGetErrorString(err)
            msg = msg[1].decode() if isinstance(msg, tuple) and isinstance(msg[1], bytes) else str(err)
            raise TrtSparseError("{} failed: {} ({})".format(what, msg, getattr(err, "name", err)))
        if isinstance(result, tuple):
            return result[1] if len(result) == 2 else result[1:]
        return None

    def version(self):
        mod = importlib.import_module("cuda.bindings") if self.rt.__name__.startswith("cuda.bindings") else None
        return getattr(mod, "__version__", None) if mod else None

    def malloc(self, nbytes):
        return int(self._check(self.rt.cudaMalloc(max(int(nbytes), 1)), "cudaMalloc"))

    def free(self, ptr):
        self._check(self.rt.cudaFree(ptr), "cudaFree")

    def stream(self):
        return self._check(self.rt.cudaStreamCreateWithFlags(self.rt.cudaStreamNonBlocking), "cudaStreamCreate")

    def stream_handle(self, stream):
        return int(stream)

    def sync(self, stream):
        self._check(self.rt.cudaStreamSynchronize(stream), "cudaStreamSynchronize")

    def destroy_stream(self, stream):
        self._check(self.rt.cudaStreamDestroy(stream), "cudaStreamDestroy")

    def htod(self, ptr, array, stream):
        kind = self.rt.cudaMemcpyKind.cudaMemcpyHostToDevice
        self._check(self.rt.cudaMemcpyAsync(ptr, array.ctypes.data, array.nbytes, kind, stream), "cudaMemcpyAsync")

    def dtoh(self, array, ptr, stream):
        kind = self.rt.cudaMemcpyKind.cudaMemcpyDeviceToHost
        self._check(self.rt.cudaMemcpyAsync(array.ctypes.data, ptr, array.nbytes, kind, stream), "cudaMemcpyAsync")

    def event(self):
        return self._check(self.rt.cudaEventCreate(), "cudaEventCreate")

    def record(self, event, stream):
        self._check(self.rt.cudaEventRecord(event, stream), "cudaEventRecord")

    def elapsed_ms(self, start, end):
        return float(self._check(self.rt.cudaEventElapsedTime(start, end), "cudaEventElapsedTime"))

    def destroy_event(self, event):
        self._check(self.rt.cudaEventDestroy(event), "cudaEventDestroy")

    def mem_info(self):
        free, total = self._check(self.rt.cudaMemGetInfo(), "cudaMemGetInfo")
        return int(free), int(total)

    supports_graphs = True

    def capture(self, stream, enqueue):
        """Capture ``enqueue()`` on ``stream`` into an instantiated CUDA graph."""
        mode = self.rt.cudaStreamCaptureMode.cudaStreamCaptureModeThreadLocal
        self._check(self.rt.cudaStreamBeginCapture(stream, mode), "cudaStreamBeginCapture")
        try:
            enqueue()
        finally:
            graph = self._check(self.rt.cudaStreamEndCapture(stream), "cudaStreamEndCapture")
        try:  # CUDA >= 12 bindings: (graph, flags)
            result = self.rt.cudaGraphInstantiate(graph, 0)
        except TypeError:  # cuda-python 11.x: (graph, log buffer, size); use the flags variant
            result = self.rt.cudaGraphInstantiateWithFlags(graph, 0)
        exec_ = self._check(result, "cudaGraphInstantiate")
        if isinstance(exec_, tuple):
            exec_ = exec_[0]
        return (graph, exec_)

    def launch(self, graph, stream):
        self._check(self.rt.cudaGraphLaunch(graph[1], stream), "cudaGraphLaunch")

    def destroy_graph(self, graph):
        self._check(self.rt.cudaGraphExecDestroy(graph[1]), "cudaGraphExecDestroy")
        self._check(self.rt.cudaGraphDestroy(graph[0]), "cudaGraphDestroy")

    def device_info(self):
        prop = self._check(self.rt.cudaGetDeviceProperties(self.device), "cudaGetDeviceProperties")
        name = prop.name
        name = name.split(b"\0", 1)[0].decode() if isinstance(name, bytes) else str(name)
        driver = self._check(self.rt.cudaDriverGetVersion(), "cudaDriverGetVersion")
        runtime = self._check(self.rt.cudaRuntimeGetVersion(), "cudaRuntimeGetVersion")
        return collections.OrderedDict([
            ("name", name), ("compute_capability", "{}.{}".format(prop.major, prop.minor)),
            ("total_memory", int(prop.totalGlobalMem)), ("driver", _cuda_version(driver)),
            ("cuda_runtime", _cuda_version(runtime)),
        ])

    def close(self):
        pass


class _PyCuda:
    """pycuda driver API on the device's primary context (the one TensorRT's runtime API uses)."""

    name = "pycuda"
    supports_graphs = False

    def __init__(self, device=0):
        self.cuda = importlib.import_module("pycuda.driver")
        try:
            self.cuda.init()
            self.dev = self.cuda.Device(int(device))
            self.ctx = self.dev.retain_primary_context()
            self.ctx.push()
        except self.cuda.Error as exc:
            raise TrtSparseError("pycuda cannot use CUDA device {}: {}".format(device, exc))
        self._allocs = {}
        self._events = {}

    def version(self):
        return getattr(importlib.import_module("pycuda"), "VERSION_TEXT", None)

    def malloc(self, nbytes):
        alloc = self.cuda.mem_alloc(max(int(nbytes), 1))
        self._allocs[int(alloc)] = alloc
        return int(alloc)

    def free(self, ptr):
        alloc = self._allocs.pop(int(ptr), None)
        if alloc is not None:
            alloc.free()

    def stream(self):
        return self.cuda.Stream()

    def stream_handle(self, stream):
        return int(stream.handle)

    def sync(self, stream):
        stream.synchronize()

    def destroy_stream(self, stream):
        pass

    def htod(self, ptr, array, stream):
        # synchronous copies: pycuda's async ones want page-locked memory; copies are not timed
        self.cuda.memcpy_htod(ptr, array)

    def dtoh(self, array, ptr, stream):
        self.cuda.memcpy_dtoh(array, ptr)

    def event(self):
        return self.cuda.Event()

    def record(self, event, stream):
        event.record(stream)

    def elapsed_ms(self, start, end):
        return float(end.time_since(start))

    def destroy_event(self, event):
        pass

    def mem_info(self):
        free, total = self.cuda.mem_get_info()
        return int(free), int(total)

    def device_info(self):
        major, minor = self.dev.compute_capability()
        return collections.OrderedDict([
            ("name", self.dev.name()), ("compute_capability", "{}.{}".format(major, minor)),
            ("total_memory", int(self.dev.total_memory())),
            ("driver", _cuda_version(self.cuda.get_driver_version())),
            ("cuda_runtime", ".".join(str(v) for v in self.cuda.get_version())),
        ])

    def close(self):
        for alloc in list(self._allocs.values()):
            alloc.free()
        self._allocs.clear()
        try:
            self.ctx.pop()
        except Exception:  # already popped / context gone at interpreter exit
            pass


_BACKENDS = {"cuda-python": _CudaPython, "pycuda": _PyCuda}


def _cuda_version(v):
    v = int(v)
    return "{}.{}".format(v // 1000, (v % 1000) // 10)


def backend_candidates(preferred="auto"):
    """Backend names to try, in order, for ``preferred`` (``auto``, ``cuda-python`` or ``pycuda``)."""
    if preferred in (None, "auto"):
        return list(BACKEND_ORDER)
    if preferred not in _BACKENDS:
        raise TrtSparseError("unknown CUDA backend {!r} (choose auto, {})".format(preferred, ", ".join(BACKEND_ORDER)))
    return [preferred]


def select_backend(preferred="auto", device=0, factories=None):
    """Create the first CUDA backend that works (cuda-python, then pycuda); its ``name`` says which.

    Raises TrtSparseError listing why each candidate failed.
    """
    factories = factories or _BACKENDS
    problems = []
    for name in backend_candidates(preferred):
        try:
            return factories[name](device)
        except ImportError as exc:
            problems.append("{} not installed ({})".format(name, exc))
        except TrtSparseError as exc:
            problems.append("{}: {}".format(name, exc))
        except Exception as exc:  # a driver error raised by the library itself
            problems.append("{}: {}".format(name, exc))
    raise TrtSparseError(
        "no usable CUDA backend: {}; install cuda-python (pip install 'trt-sparse[cuda]') or pycuda, "
        "and run on a machine with an NVIDIA GPU and driver".format("; ".join(problems))
    )


def device_info(device=0):
    """Name, compute capability, memory, driver of CUDA device ``device``; {"name": None, "error"} without one."""
    try:
        backend = select_backend("auto", device)
    except TrtSparseError as exc:
        return collections.OrderedDict([("name", None), ("error", str(exc))])
    try:
        info = backend.device_info()
        info["cuda_backend"] = backend.name
        return info
    except Exception as exc:
        return collections.OrderedDict([("name", None), ("error", str(exc))])
    finally:
        backend.close()


# ---------------------------------------------------------------- engine runner

def sidecar_mismatches(metadata, trt, plugin_lib):
    """Reasons an engine may not load here, from its build sidecar: other TensorRT, other plugin build."""
    problems = []
    if not metadata:
        return problems
    built = metadata.get("tensorrt") or {}
    here = {"flavour": trt_loader.flavour(trt), "version": str(getattr(trt, "__version__", "?"))}
    if built.get("flavour") and (built.get("flavour"), built.get("version")) != (here["flavour"], here["version"]):
        problems.append("built with {} {}, running with {} {} (engines are version-specific)".format(
            built.get("flavour"), built.get("version"), here["flavour"], here["version"]))
    plugin = metadata.get("plugin")
    if plugin and plugin_lib is None:
        problems.append("built with the plugin library {} but none is loaded (pass --plugin)".format(plugin.get("path")))
    elif plugin and plugin.get("sha256") and trt_loader.file_sha256(plugin_lib) != plugin["sha256"]:
        problems.append("the plugin library {} differs from the one the engine was built with ({})".format(
            plugin_lib, plugin.get("path")))
    return problems


class EngineRunner:
    """A deserialized engine with device buffers: ``infer``, ``time``, ``profile_layers``.

    ``engine``: path to an ``.engine`` file or its bytes. The plugin library (if
    the engine uses SparseConv2d) must be given or findable by
    :func:`trt_loader.find_plugin_library`.
    """

    def __init__(self, engine, plugin_lib=None, backend="auto", trt_backend="auto", device=0, verbose=False):
        self.trt = trt = trt_loader.import_tensorrt(trt_backend)
        self.cuda = select_backend(backend, device) if isinstance(backend, str) or backend is None else backend
        self._buffers = {}
        self._stream = None
        self.context = None
        from .engine import _make_logger

        self.logger = _make_logger(trt, verbose=verbose)
        if isinstance(engine, (bytes, bytearray, memoryview)):
            blob = bytes(engine)
            self.path = None
        else:
            self.path = os.fspath(engine)
            if not os.path.isfile(self.path):
                raise TrtSparseError("engine file {} does not exist".format(self.path))
            with open(self.path, "rb") as f:
                blob = f.read()
        self.engine_bytes = len(blob)
        self.runtime = trt.Runtime(self.logger)
        plugin_lib = trt_loader.find_plugin_library(plugin_lib)
        self.metadata = None
        if self.path is not None:
            from .engine import read_sidecar

            self.metadata = read_sidecar(self.path)
            for problem in sidecar_mismatches(self.metadata, trt, plugin_lib):
                sys.stderr.write("warning: {}: {}\n".format(self.path, problem))
        if plugin_lib is not None:
            registry = self.runtime.get_plugin_registry() if hasattr(self.runtime, "get_plugin_registry") else None
            trt_loader.load_plugin_library(trt, plugin_lib, logger=self.logger, registry=registry)
        free_before = self._mem_free()
        self.engine = self.runtime.deserialize_cuda_engine(blob)
        if self.engine is None:
            raise TrtSparseError("TensorRT could not deserialize {}: {}".format(
                self.path or "the engine", "; ".join(self.logger.errors[-3:]) or
                "built with another TensorRT version, for another GPU, or the plugin library is missing"))
        self.context = self.engine.create_execution_context()
        if self.context is None:
            raise TrtSparseError("TensorRT could not create an execution context: {}".format(
                "; ".join(self.logger.errors[-3:]) or "out of device memory?"))
        self._mem_after_context = self._mem_free()
        self.context_memory = (free_before - self._mem_after_context) if free_before is not None else None
        self.tensor_api = hasattr(self.engine, "num_io_tensors")
        self.tensors = self._describe()
        self._stream = self.cuda.stream()
        self._shapes = {}
        self._bound_shapes = None

    # ---- description
    def _describe(self):
        trt, eng = self.trt, self.engine
        out = []
        if self.tensor_api:
            for i in range(eng.num_io_tensors):
                name = eng.get_tensor_name(i)
                is_input = eng.get_tensor_mode(name) == trt.TensorIOMode.INPUT
                shape = tuple(eng.get_tensor_shape(name))
                profile = None
                if is_input and any(d < 0 for d in shape):
                    profile = tuple(tuple(s) for s in eng.get_tensor_profile_shape(name, 0))
                out.append(TensorInfo(name, is_input, np.dtype(trt.nptype(eng.get_tensor_dtype(name))), shape, profile))
        else:
            for i in range(eng.num_bindings):
                is_input = eng.binding_is_input(i)
                shape = tuple(eng.get_binding_shape(i))
                profile = None
                if is_input and any(d < 0 for d in shape):
                    profile = tuple(tuple(s) for s in eng.get_profile_shape(0, i))
                out.append(TensorInfo(eng.get_binding_name(i), is_input, np.dtype(trt.nptype(eng.get_binding_dtype(i))),
                                      shape, profile))
        return out

    @property
    def inputs(self):
        """TensorInfo of the inputs, in engine order."""
        return [t for t in self.tensors if t.is_input]

    @property
    def outputs(self):
        """TensorInfo of the outputs, in engine order."""
        return [t for t in self.tensors if not t.is_input]

    def default_input_shapes(self):
        """Static shape, or the profile's opt shape, of every input."""
        return collections.OrderedDict(
            (t.name, tuple(t.profile[1]) if t.profile is not None else tuple(t.shape)) for t in self.inputs)

    def device_memory(self):
        """Device memory: engine activations (from TensorRT) and what creating the context took (measured)."""
        eng = self.engine
        size = getattr(eng, "device_memory_size_v2", None)
        if size is None:
            size = getattr(eng, "device_memory_size", None)
        return collections.OrderedDict([
            ("engine_file_bytes", self.engine_bytes),
            ("activation_bytes", int(size) if size is not None else None),
            ("measured_load_bytes", self.context_memory),
        ])

    def _mem_free(self):
        try:
            return self.cuda.mem_info()[0]
        except Exception:
            return None

    # ---- I/O
    def _bind(self, inputs):
        """Set input shapes, (re)allocate buffers and copy ``inputs`` to the device."""
        missing = [t.name for t in self.inputs if t.name not in inputs]
        if missing:
            raise TrtSparseError("missing input(s) {}".format(", ".join(missing)))
        arrays = collections.OrderedDict((t.name, check_input(t, inputs[t.name])) for t in self.inputs)
        shapes = {n: a.shape for n, a in arrays.items()}
        ctx, eng = self.context, self.engine
        if shapes != self._bound_shapes:
            if self.tensor_api:
                for name, shape in shapes.items():
                    if not ctx.set_input_shape(name, shape):
                        raise TrtSparseError("TensorRT rejected shape {} for input {}".format(shape, name))
                out_shapes = {t.name: tuple(ctx.get_tensor_shape(t.name)) for t in self.outputs}
            else:
                index = {eng.get_binding_name(i): i for i in range(eng.num_bindings)}
                for name, shape in shapes.items():
                    if not ctx.set_binding_shape(index[name], shape):
                        raise TrtSparseError("TensorRT rejected shape {} for input {}".format(shape, name))
                if not ctx.all_binding_shapes_specified:
                    raise TrtSparseError("not all input shapes are specified")
                out_shapes = {t.name: tuple(ctx.get_binding_shape(index[t.name])) for t in self.outputs}
            for name, shape in out_shapes.items():
                if any(d < 0 for d in shape):
                    raise TrtSparseError("output {} has unresolved shape {}".format(name, shape))
            self._free_buffers()
            all_shapes = dict(shapes)
            all_shapes.update(out_shapes)
            for t in self.tensors:
                nbytes = int(np.prod(all_shapes[t.name], dtype=np.int64)) * t.dtype.itemsize
                self._buffers[t.name] = (self.cuda.malloc(nbytes), all_shapes[t.name])
            if self.tensor_api:
                for t in self.tensors:
                    ctx.set_tensor_address(t.name, self._buffers[t.name][0])
            self._bound_shapes = shapes
        for name, arr in arrays.items():
            self.cuda.htod(self._buffers[name][0], arr, self._stream)
        self.cuda.sync(self._stream)

    def _enqueue(self):
        handle = self.cuda.stream_handle(self._stream)
        if self.tensor_api:
            ok = self.context.execute_async_v3(handle)
        else:
            bindings = [self._buffers[t.name][0] for t in self.tensors]
            ok = self.context.execute_async_v2(bindings, handle)
        if not ok:
            raise TrtSparseError("TensorRT failed to enqueue the engine: {}".format(
                "; ".join(self.logger.errors[-3:]) or "see the log above"))

    def _fetch_outputs(self):
        out = collections.OrderedDict()
        for t in self.outputs:
            ptr, shape = self._buffers[t.name]
            arr = np.empty(shape, dtype=t.dtype)
            self.cuda.dtoh(arr, ptr, self._stream)
            out[t.name] = arr
        self.cuda.sync(self._stream)
        return out

    def infer(self, inputs):
        """Run once on ``{name: array}``; return ``{output name: array}``."""
        self._bind(inputs)
        self._enqueue()
        return self._fetch_outputs()

    def time(self, inputs, iterations=100, warmup=10, cuda_graph=False, progress=None):
        """Per-iteration GPU latencies (ms) of ``iterations`` enqueues after ``warmup`` ones.

        With ``cuda_graph`` one enqueue is captured into a CUDA graph and the graph
        is replayed (cuda-python backend only). ``progress``: a tqdm-like bar updated per iteration.
        """
        if iterations < 1:
            raise TrtSparseError("--iterations must be >= 1")
        self._bind(inputs)
        cuda, stream = self.cuda, self._stream
        for _ in range(max(int(warmup), 1)):  # at least one: TensorRT must enqueue before a capture
            self._enqueue()
        cuda.sync(stream)
        graph = None
        if cuda_graph:
            if not getattr(cuda, "supports_graphs", False):
                raise TrtSparseError("CUDA graph capture needs the cuda-python backend (pip install cuda-python)")
            graph = cuda.capture(stream, self._enqueue)
            cuda.launch(graph, stream)
            cuda.sync(stream)
        run = (lambda: cuda.launch(graph, stream)) if graph is not None else self._enqueue
        times = []
        chunk = 256
        events = [(cuda.event(), cuda.event()) for _ in range(min(chunk, iterations))]
        try:
            done = 0
            while done < iterations:
                n = min(chunk, iterations - done)
                for i in range(n):
                    cuda.record(events[i][0], stream)
                    run()
                    cuda.record(events[i][1], stream)
                cuda.sync(stream)
                times.extend(cuda.elapsed_ms(events[i][0], events[i][1]) for i in range(n))
                done += n
                if progress is not None:
                    progress.update(n)
        finally:
            for a, b in events:
                cuda.destroy_event(a)
                cuda.destroy_event(b)
            if graph is not None:
                cuda.destroy_graph(graph)
        return times

    def profile_layers(self, inputs, iterations=10):
        """Mean per-layer time (ms) over ``iterations`` runs via IProfiler, slowest first; [] if unavailable.

        Call it after :meth:`time` (a profiled run synchronises after every layer).
        """
        trt = self.trt
        if not hasattr(trt, "IProfiler"):
            return []
        self._bind(inputs)

        class _Profiler(trt.IProfiler):
            def __init__(self):
                trt.IProfiler.__init__(self)
                self.totals = collections.OrderedDict()
                self.counts = collections.Counter()

            def report_layer_time(self, layer_name, ms):
                self.totals[layer_name] = self.totals.get(layer_name, 0.0) + ms
                self.counts[layer_name] += 1

        prof = _Profiler()
        # the timing context itself: TensorRT 8.x allows one context per optimization profile.
        # Call this after time(): a profiled enqueue synchronises after every layer.
        ctx = self.context
        ctx.profiler = prof
        try:
            for _ in range(max(int(iterations), 1)):
                self._enqueue()
                self.cuda.sync(self._stream)
        finally:
            try:
                ctx.profiler = None
            except (TypeError, AttributeError):  # bindings that refuse None: leave it attached
                pass
        rows = [(name, total / prof.counts[name]) for name, total in prof.totals.items()]
        rows.sort(key=lambda r: -r[1])
        return rows

    # ---- cleanup
    def _free_buffers(self):
        for ptr, _ in self._buffers.values():
            try:
                self.cuda.free(ptr)
            except Exception:
                pass
        self._buffers = {}
        self._bound_shapes = None

    def close(self):
        """Free device buffers, the stream and the TensorRT objects."""
        self._free_buffers()
        if self._stream is not None:
            try:
                self.cuda.destroy_stream(self._stream)
            except Exception:
                pass
            self._stream = None
        self.context = None
        self.engine = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
