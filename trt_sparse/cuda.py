"""ctypes binding of the CUDA kernel library ``libtrt_sparse_kernels.so``.

The plan runs on device buffers given as raw pointers, so torch, cupy and
cuda-python all work::

    plan = SparseConvPlan(sw, strides=(1, 1), pads=(1, 1, 1, 1), dtype="fp32")
    y = torch.empty(plan.output_shape(x.shape), device="cuda")
    plan.enqueue(x, y)              # tensors/arrays or int pointers; current torch stream by default

Library lookup: env ``TRT_SPARSE_KERNELS_LIB``, then ``build/kernels/`` under the
repository root (or the current directory).
"""
import ctypes
import os

import numpy as np

from .errors import TrtSparseError

TSC_OK = 0
_DTYPES = {"fp32": 0, "float32": 0, "fp16": 1, "float16": 1}
_LAYOUTS = {"NCHW": 0, "NHWC": 1}
_LIB_NAME = "libtrt_sparse_kernels.so"


class KernelError(TrtSparseError):
    """A kernel-library call failed (message carries the library's detail)."""


class _Desc(ctypes.Structure):
    _fields_ = [(n, ctypes.c_int32) for n in (
        "K", "C", "R", "S", "stride_h", "stride_w", "pad_top", "pad_left", "pad_bottom",
        "pad_right", "dilation_h", "dilation_w", "activation")] + [
        ("clip_min", ctypes.c_float), ("clip_max", ctypes.c_float)]


class _Weights(ctypes.Structure):
    _fields_ = [("row_offsets", ctypes.c_void_p), ("indices", ctypes.c_void_p),
                ("values", ctypes.c_void_p), ("bias", ctypes.c_void_p)]


def library_candidates():
    """Paths tried, in order, for the kernel library."""
    env = os.environ.get("TRT_SPARSE_KERNELS_LIB")
    out = [env] if env else []
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for base in (root, os.getcwd()):
        out.append(os.path.join(base, "build", "kernels", _LIB_NAME))
    return out


def find_library():
    """Path of the kernel library, or None."""
    for p in library_candidates():
        if p and os.path.isfile(p):
            return p
    return None


_lib = None


def load_library(path=None):
    """Load (once) and return the ctypes library; raises TrtSparseError if missing."""
    global _lib
    if _lib is not None and path is None:
        return _lib
    path = path or find_library()
    if not path:
        raise TrtSparseError(
            "kernel library {} not found (build it: cmake -S plugin -B build && cmake --build build -j2, "
            "or set TRT_SPARSE_KERNELS_LIB)".format(_LIB_NAME))
    try:
        lib = ctypes.CDLL(path)
    except OSError as exc:
        raise TrtSparseError("cannot load kernel library {}: {}".format(path, exc))
    vp, i32 = ctypes.c_void_p, ctypes.c_int32
    lib.tsc_abi_version.restype = i32
    lib.tsc_status_string.restype = ctypes.c_char_p
    lib.tsc_status_string.argtypes = [ctypes.c_int]
    lib.tsc_last_error.restype = ctypes.c_char_p
    lib.tsc_output_dims.argtypes = [ctypes.POINTER(_Desc), i32, i32, ctypes.POINTER(i32), ctypes.POINTER(i32)]
    lib.tsc_plan_create.argtypes = [ctypes.POINTER(_Desc), ctypes.POINTER(_Weights), ctypes.c_int, ctypes.c_int,
                                    ctypes.POINTER(vp)]
    lib.tsc_plan_destroy.argtypes = [vp]
    lib.tsc_plan_destroy.restype = None
    lib.tsc_plan_tune.argtypes = [vp, i32, i32, i32, vp, vp, vp, vp]
    lib.tsc_workspace_size.argtypes = [vp, i32, i32, i32]
    lib.tsc_workspace_size.restype = ctypes.c_size_t
    lib.tsc_enqueue.argtypes = [vp, i32, i32, i32, vp, vp, vp, vp]
    lib.tsc_plan_describe.argtypes = [vp, ctypes.c_char_p, ctypes.c_size_t]
    lib.tsc_plan_describe.restype = ctypes.c_size_t
    if hasattr(lib, "tsc_plan_get_choice"):  # added within ABI 1 (older builds lack them)
        lib.tsc_plan_get_choice.argtypes = [vp, i32, i32, i32, ctypes.POINTER(i32)]
        lib.tsc_plan_set_choice.argtypes = [vp, i32, i32, i32, i32]
        lib.tsc_plan_device_bytes.argtypes = [vp]
        lib.tsc_plan_device_bytes.restype = ctypes.c_size_t
        lib.tsc_plan_tune_scratch.argtypes = [vp, i32, i32, i32]
    if hasattr(lib, "tsc_plan_set_math"):  # added within ABI 1
        lib.tsc_plan_set_math.argtypes = [vp, i32]
    if hasattr(lib, "tsc_bench_fma_peak"):
        lib.tsc_bench_fma_peak.argtypes = [ctypes.POINTER(ctypes.c_double)]
        lib.tsc_bench_empty_launch.argtypes = [i32, vp, ctypes.POINTER(ctypes.c_double)]
        lib.tsc_bench_empty_kernel.argtypes = [vp]
    if hasattr(lib, "tsc_plan_variant_count"):
        lib.tsc_plan_variant_count.argtypes = [vp, i32, i32, i32]
        lib.tsc_plan_variant_count.restype = i32
        lib.tsc_plan_variant_name.argtypes = [vp, i32, i32, i32, i32, ctypes.c_char_p, ctypes.c_size_t]
        lib.tsc_plan_variant_name.restype = ctypes.c_size_t
        lib.tsc_plan_enqueue_variant.argtypes = [vp, i32, i32, i32, i32, vp, vp, vp, vp]
    if lib.tsc_abi_version() != 1:
        raise TrtSparseError("kernel library {} has ABI {} (expected 1)".format(path, lib.tsc_abi_version()))
    if path is None or _lib is None:
        _lib = lib
    return lib


def _check(lib, status, what):
    if status != TSC_OK:
        raise KernelError("{}: {} ({})".format(
            what, lib.tsc_status_string(status).decode(), lib.tsc_last_error().decode()))


def pointer_of(obj):
    """Device pointer of a torch tensor, cupy array, cuda-python allocation or int (None -> 0)."""
    if obj is None:
        return 0
    if isinstance(obj, int):
        return obj
    if hasattr(obj, "data_ptr"):  # torch
        return int(obj.data_ptr())
    data = getattr(obj, "data", None)
    if data is not None and hasattr(data, "ptr"):  # cupy
        return int(data.ptr)
    if hasattr(obj, "__cuda_array_interface__"):
        return int(obj.__cuda_array_interface__["data"][0])
    return int(obj)


def current_stream():
    """Handle of torch's current CUDA stream if torch is loaded, else 0 (legacy default stream)."""
    import sys
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        return int(torch.cuda.current_stream().cuda_stream)
    return 0


def _desc(shape, strides, pads, dilations, activation, clip_min, clip_max):
    k, c, r, s = (int(v) for v in shape)
    d = _Desc()
    d.K, d.C, d.R, d.S = k, c, r, s
    d.stride_h, d.stride_w = (int(v) for v in strides)
    d.pad_top, d.pad_left, d.pad_bottom, d.pad_right = (int(v) for v in pads)
    d.dilation_h, d.dilation_w = (int(v) for v in dilations)
    d.activation = int(activation)
    d.clip_min, d.clip_max = float(clip_min), float(clip_max)
    return d


def output_dims(shape, H, W, strides=(1, 1), pads=(0, 0, 0, 0), dilations=(1, 1)):
    """(P, Q) output size computed by the library."""
    lib = load_library()
    d = _desc(shape, strides, pads, dilations, 0, 0.0, 6.0)
    p, q = ctypes.c_int32(), ctypes.c_int32()
    _check(lib, lib.tsc_output_dims(ctypes.byref(d), int(H), int(W), ctypes.byref(p), ctypes.byref(q)),
           "tsc_output_dims")
    return p.value, q.value


class SparseConvPlan(object):
    """A kernel plan for one SparseConvWeight (weights uploaded to the current device)."""

    def __init__(self, weight, bias=None, strides=(1, 1), pads=(0, 0, 0, 0), dilations=(1, 1), activation=0,
                 clip_min=0.0, clip_max=6.0, dtype="fp32", layout="NCHW", lib=None, allow_tf32=False):
        if dtype not in _DTYPES:
            raise TrtSparseError("dtype must be fp32 or fp16, got {!r}".format(dtype))
        if layout not in _LAYOUTS:
            raise TrtSparseError("layout must be NCHW or NHWC, got {!r}".format(layout))
        self._lib = lib or load_library()
        self._plan = ctypes.c_void_p()
        self.shape = tuple(int(v) for v in weight.shape)
        self.dtype, self.layout = dtype, layout
        self._desc = _desc(self.shape, strides, pads, dilations, activation, clip_min, clip_max)
        ro = np.ascontiguousarray(weight.row_offsets, dtype=np.int32)
        ix = np.ascontiguousarray(weight.indices, dtype=np.int32)
        va = np.ascontiguousarray(weight.values, dtype=np.float32)
        b = None if bias is None else np.ascontiguousarray(bias, dtype=np.float32).reshape(-1)
        if b is not None and b.size != self.shape[0]:
            raise TrtSparseError("bias has {} values, expected K = {}".format(b.size, self.shape[0]))
        w = _Weights(ro.ctypes.data, ix.ctypes.data if ix.size else None, va.ctypes.data if va.size else None,
                     b.ctypes.data if b is not None else None)
        _check(self._lib, self._lib.tsc_plan_create(ctypes.byref(self._desc), ctypes.byref(w), _DTYPES[dtype],
                                                    _LAYOUTS[layout], ctypes.byref(self._plan)), "tsc_plan_create")
        self.allow_tf32 = bool(allow_tf32)
        if self.allow_tf32:  # opt-in: fp32 plans may then run TF32 tensor-core variants (~1e-3 relative)
            try:
                self._need("tsc_plan_set_math")
            except TrtSparseError:
                self.close()
                raise
            _check(self._lib, self._lib.tsc_plan_set_math(self._plan, 1), "tsc_plan_set_math")

    def output_shape(self, input_shape):
        """Output shape for an input shape (NCHW or NHWC like the plan)."""
        if self.layout == "NCHW":
            n, _, h, w = input_shape
        else:
            n, h, w, _ = input_shape
        p, q = ctypes.c_int32(), ctypes.c_int32()
        _check(self._lib, self._lib.tsc_output_dims(ctypes.byref(self._desc), int(h), int(w), ctypes.byref(p),
                                                    ctypes.byref(q)), "tsc_output_dims")
        k = self.shape[0]
        return (n, k, p.value, q.value) if self.layout == "NCHW" else (n, p.value, q.value, k)

    def _nhw(self, x, shape):
        shape = tuple(shape if shape is not None else x.shape)
        return (shape[0], shape[2], shape[3]) if self.layout == "NCHW" else (shape[0], shape[1], shape[2])

    def workspace_size(self, n, h, w):
        """Workspace bytes for an input of N x H x W."""
        return int(self._lib.tsc_workspace_size(self._plan, int(n), int(h), int(w)))

    def enqueue(self, x, y, workspace=None, stream=None, input_shape=None):
        """Launch y = conv(x) asynchronously on `stream` (default: torch's current stream)."""
        n, h, w = self._nhw(x, input_shape)
        s = current_stream() if stream is None else pointer_of(stream)
        _check(self._lib, self._lib.tsc_enqueue(self._plan, n, h, w, pointer_of(x), pointer_of(y),
                                                pointer_of(workspace), s), "tsc_enqueue")

    def tune(self, x, y, workspace=None, stream=None, input_shape=None):
        """Time the kernel variants on these buffers and keep the fastest for this shape."""
        n, h, w = self._nhw(x, input_shape)
        s = current_stream() if stream is None else pointer_of(stream)
        _check(self._lib, self._lib.tsc_plan_tune(self._plan, n, h, w, pointer_of(x), pointer_of(y),
                                                  pointer_of(workspace), s), "tsc_plan_tune")

    def variants(self, n, h, w):
        """Names of the kernel variants that can run an N x H x W input (index = position)."""
        count = self._lib.tsc_plan_variant_count(self._plan, int(n), int(h), int(w))
        out = []
        for i in range(count):
            size = self._lib.tsc_plan_variant_name(self._plan, i, int(n), int(h), int(w), None, 0)
            buf = ctypes.create_string_buffer(int(size))
            self._lib.tsc_plan_variant_name(self._plan, i, int(n), int(h), int(w), buf, size)
            out.append(buf.value.decode())
        return out

    def enqueue_variant(self, index, x, y, workspace=None, stream=None, input_shape=None):
        """Launch one specific variant (see variants())."""
        n, h, w = self._nhw(x, input_shape)
        s = current_stream() if stream is None else pointer_of(stream)
        _check(self._lib, self._lib.tsc_plan_enqueue_variant(self._plan, int(index), n, h, w, pointer_of(x),
                                                             pointer_of(y), pointer_of(workspace), s),
               "tsc_plan_enqueue_variant")

    def _need(self, name):
        if not hasattr(self._lib, name):
            raise TrtSparseError("kernel library is too old: it has no {} (rebuild it)".format(name))

    def device_bytes(self):
        """Device memory the plan holds now (bytes): weights in every built layout + bias."""
        self._need("tsc_plan_device_bytes")
        return int(self._lib.tsc_plan_device_bytes(self._plan))

    def get_choice(self, n, h, w):
        """Stable id of the variant enqueue uses for an N x H x W input (tuned or heuristic)."""
        self._need("tsc_plan_get_choice")
        v = ctypes.c_int32()
        _check(self._lib, self._lib.tsc_plan_get_choice(self._plan, int(n), int(h), int(w), ctypes.byref(v)),
               "tsc_plan_get_choice")
        return v.value

    def set_choice(self, n, h, w, variant_id):
        """Use variant `variant_id` (from get_choice) for N x H x W; KernelError if unknown/unsupported."""
        self._need("tsc_plan_set_choice")
        _check(self._lib, self._lib.tsc_plan_set_choice(self._plan, int(n), int(h), int(w), int(variant_id)),
               "tsc_plan_set_choice")

    def tune_scratch(self, n, h, w):
        """tune() on scratch buffers the library allocates and frees itself."""
        self._need("tsc_plan_tune_scratch")
        _check(self._lib, self._lib.tsc_plan_tune_scratch(self._plan, int(n), int(h), int(w)),
               "tsc_plan_tune_scratch")

    def describe(self):
        """The library's description of the plan (dtype, nnz, device_bytes, tuned variants)."""
        size = self._lib.tsc_plan_describe(self._plan, None, 0)
        buf = ctypes.create_string_buffer(int(size))
        self._lib.tsc_plan_describe(self._plan, buf, size)
        return buf.value.decode()

    def close(self):
        """Free the plan (also done on garbage collection)."""
        if getattr(self, "_plan", None) and self._plan.value:
            self._lib.tsc_plan_destroy(self._plan)
            self._plan = ctypes.c_void_p()

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown
            pass


def fma_peak_tflops():
    """Measured fp32 FMA peak of the current device (TFLOP/s)."""
    lib = load_library()
    v = ctypes.c_double()
    _check(lib, lib.tsc_bench_fma_peak(ctypes.byref(v)), "tsc_bench_fma_peak")
    return v.value


def empty_launch_us(count=1000, stream=None):
    """Mean time of an empty kernel launch in a loop (microseconds)."""
    lib = load_library()
    v = ctypes.c_double()
    s = current_stream() if stream is None else pointer_of(stream)
    _check(lib, lib.tsc_bench_empty_launch(int(count), s, ctypes.byref(v)), "tsc_bench_empty_launch")
    return v.value


def empty_kernel(stream=None):
    """Launch one empty kernel (graph-capturable; the benchmark's one-launch floor)."""
    lib = load_library()
    s = current_stream() if stream is None else pointer_of(stream)
    _check(lib, lib.tsc_bench_empty_kernel(s), "tsc_bench_empty_kernel")
