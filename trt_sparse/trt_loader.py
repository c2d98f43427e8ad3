"""Find and import TensorRT (or TensorRT-RTX) and the SparseConv2d plugin library.

TensorRT is never a hard dependency of trt-sparse: everything that needs it goes
through :func:`import_tensorrt`, which raises a one-line, actionable
:class:`~trt_sparse.errors.TrtSparseError` when no TensorRT flavour is installed.

TensorRT-RTX quirk: its ONNX parser ``dlopen``s an *unversioned*
``libtensorrt_rtx.so`` when it adds a plugin layer and aborts the whole process
when that fails; the pip wheel only ships ``libtensorrt_rtx.so.1``. The dynamic
loader reads ``LD_LIBRARY_PATH`` once, at process start, so
:func:`ensure_rtx_library_path` creates a directory holding the symlink and
:func:`rtx_env` / :func:`reexec_with_rtx_library_path` put it on
``LD_LIBRARY_PATH`` of a new process.
"""
import hashlib
import importlib
import importlib.util
import os
import re
import sys
import tempfile

from .errors import TrtSparseError

#: module names tried by import_tensorrt, in order, per backend name
BACKENDS = {
    "tensorrt": ("tensorrt",),
    "rtx": ("tensorrt_rtx_bindings",),
    "auto": ("tensorrt", "tensorrt_rtx_bindings"),
}

#: environment variables understood here
ENV_BACKEND = "TRT_SPARSE_TRT_BACKEND"  # auto | tensorrt | rtx
ENV_PLUGIN = "TRT_SPARSE_PLUGIN_LIB"
ENV_RTX_LIB_DIR = "TRT_SPARSE_RTX_LIB_DIR"  # where to create the libtensorrt_rtx.so symlink
ENV_REEXEC = "TRT_SPARSE_RTX_REEXEC"  # set in a re-executed process, prevents loops

RTX_UNVERSIONED = "libtensorrt_rtx.so"
RTX_LIBS_MODULE = "tensorrt_rtx_libs"

INSTALL_HINT = (
    "install TensorRT (pip install tensorrt, or the JetPack/TensorRT packages on Jetson) "
    "or, to build engines for RTX GPUs or on a machine without a GPU, "
    "TensorRT-RTX: pip install 'trt-sparse[rtx]'"
)

_REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _is_usable(module):
    """True when ``module`` is a real TensorRT binding (not a placeholder package)."""
    return hasattr(module, "Builder") and hasattr(module, "Logger")


def import_tensorrt(backend="auto"):
    """Import and return a TensorRT Python module.

    ``backend`` is ``"auto"`` (``tensorrt``, then ``tensorrt_rtx_bindings``),
    ``"tensorrt"`` or ``"rtx"``; the environment variable
    ``TRT_SPARSE_TRT_BACKEND`` overrides ``"auto"``. Raises TrtSparseError with
    an install hint when none can be imported.
    """
    if backend in (None, "auto"):
        backend = os.environ.get(ENV_BACKEND, "auto") or "auto"
    if backend not in BACKENDS:
        raise TrtSparseError(
            "unknown TensorRT backend {!r} (choose one of: {})".format(backend, ", ".join(sorted(BACKENDS)))
        )
    problems = []
    for name in BACKENDS[backend]:
        try:
            module = importlib.import_module(name)
        except ImportError as exc:  # includes a wheel whose shared libraries fail to load
            problems.append("{}: {}".format(name, str(exc).splitlines()[0] if str(exc) else type(exc).__name__))
            continue
        except Exception as exc:  # placeholder wheels may raise anything on import
            problems.append("{}: {}".format(name, exc))
            continue
        if not _is_usable(module):
            problems.append("{}: not a usable TensorRT binding (placeholder package?)".format(name))
            continue
        return module
    raise TrtSparseError(
        "TensorRT is not available ({}); {}".format("; ".join(problems), INSTALL_HINT)
    )


def flavour(trt):
    """Return ``"tensorrt-rtx"`` or ``"tensorrt"`` for an imported TensorRT module."""
    return "tensorrt-rtx" if trt.__name__.split(".")[0].startswith("tensorrt_rtx") else "tensorrt"


def version_tuple(trt):
    """Return the module's version as a tuple of ints, e.g. (10, 3, 0, 26)."""
    parts = []
    for piece in str(getattr(trt, "__version__", "0")).split("."):
        digits = re.match(r"\d*", piece).group(0)
        if not digits:
            break
        parts.append(int(digits))
        if len(digits) != len(piece):  # "0b3", "1rc1": stop at the pre-release tag
            break
    return tuple(parts) or (0,)


def is_strongly_typed_only(trt):
    """True for TensorRT >= 11 and TensorRT-RTX: precision lives in the network types only."""
    if flavour(trt) == "tensorrt-rtx":
        return True
    return version_tuple(trt)[0] >= 11


# ---------------------------------------------------------------- TensorRT-RTX library path

def rtx_library_dir():
    """Return the directory of the TensorRT-RTX wheel's shared libraries, or None."""
    try:
        spec = importlib.util.find_spec(RTX_LIBS_MODULE)
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        if os.path.exists(os.path.join(location, RTX_UNVERSIONED + ".1")):
            return location
    return None


def _default_link_dir(target):
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    digest = hashlib.sha256(target.encode("utf-8")).hexdigest()[:12]
    return os.path.join(base, "trt-sparse", "rtx-lib-" + digest)


def _has_unversioned(directory):
    return bool(directory) and os.path.exists(os.path.join(directory, RTX_UNVERSIONED))


def ensure_rtx_library_path(link_dir=None):
    """Create (once) a directory with ``libtensorrt_rtx.so`` -> the wheel's ``.so.1``; return it.

    The directory is ``link_dir``, else ``$TRT_SPARSE_RTX_LIB_DIR``, else
    ``~/.cache/trt-sparse/rtx-lib-<hash>`` (a temporary directory if that is not
    writable). Returns None when TensorRT-RTX's library wheel is not installed.
    """
    libdir = rtx_library_dir()
    if libdir is None:
        return None
    if _has_unversioned(libdir):
        return libdir
    target = os.path.join(libdir, RTX_UNVERSIONED + ".1")
    candidates = [link_dir or os.environ.get(ENV_RTX_LIB_DIR) or _default_link_dir(target)]
    candidates.append(os.path.join(tempfile.gettempdir(), "trt-sparse-" + os.path.basename(candidates[0])))
    last_error = None
    for directory in candidates:
        link = os.path.join(directory, RTX_UNVERSIONED)
        try:
            os.makedirs(directory, exist_ok=True)
            if os.path.islink(link) and os.path.realpath(link) == os.path.realpath(target):
                return directory
            tmp = "{}.tmp{}".format(link, os.getpid())
            if os.path.lexists(tmp):
                os.remove(tmp)
            os.symlink(target, tmp)
            os.replace(tmp, link)  # atomic, also replaces a stale link
            return directory
        except OSError as exc:
            last_error = exc
    raise TrtSparseError(
        "cannot create the {} symlink TensorRT-RTX needs ({}); set {} to a writable directory".format(
            RTX_UNVERSIONED, last_error, ENV_RTX_LIB_DIR
        )
    )


def library_path_has_rtx(env=None):
    """True when LD_LIBRARY_PATH in ``env`` (default: this process) holds ``libtensorrt_rtx.so``."""
    env = os.environ if env is None else env
    return any(_has_unversioned(d) for d in env.get("LD_LIBRARY_PATH", "").split(os.pathsep) if d)


def rtx_env(env=None, link_dir=None):
    """Return a copy of ``env`` (default os.environ) whose LD_LIBRARY_PATH starts with the RTX symlink dir.

    Unchanged copy when TensorRT-RTX is not installed or the path is already set.
    """
    env = dict(os.environ if env is None else env)
    if library_path_has_rtx(env):
        return env
    directory = ensure_rtx_library_path(link_dir)
    if directory is None:
        return env
    old = env.get("LD_LIBRARY_PATH", "")
    env["LD_LIBRARY_PATH"] = directory + (os.pathsep + old if old else "")
    return env


def rtx_needs_reexec(trt=None):
    """True when this process uses TensorRT-RTX but started without libtensorrt_rtx.so on LD_LIBRARY_PATH.

    Without ``trt`` it asks whether TensorRT-RTX would be picked by import_tensorrt("auto").
    The flag set by a previous re-exec stops endless loops.
    """
    if os.environ.get(ENV_REEXEC) == "1" or not sys.platform.startswith("linux"):
        return False
    if trt is not None:
        if flavour(trt) != "tensorrt-rtx":
            return False
    else:
        backend = os.environ.get(ENV_BACKEND, "auto") or "auto"
        if backend == "tensorrt":
            return False
        if backend == "auto" and _tensorrt_importable():
            return False
        if rtx_library_dir() is None:
            return False
    return not library_path_has_rtx()


def _tensorrt_importable():
    try:
        return importlib.util.find_spec("tensorrt") is not None and _is_usable(importlib.import_module("tensorrt"))
    except Exception:
        return False


def reexec_with_rtx_library_path(argv=None):
    """Replace this process by ``python -m trt_sparse ARGV`` with the RTX library dir on LD_LIBRARY_PATH.

    ``argv`` defaults to ``sys.argv[1:]``. Does not return on success.
    """
    env = rtx_env()
    env[ENV_REEXEC] = "1"
    args = list(sys.argv[1:] if argv is None else argv)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, [sys.executable, "-m", "trt_sparse"] + args, env)


# ---------------------------------------------------------------- plugin library

def find_plugin_library(explicit=None):
    """Return the SparseConv2d plugin library path or None.

    Order: ``explicit``, env ``TRT_SPARSE_PLUGIN_LIB``, ``build/libtrt_sparse_plugin.so``
    in the current directory, then in the source checkout. An explicit path or
    env value that does not exist raises TrtSparseError (it is a user mistake).
    """
    for source, value in (("--plugin", explicit), (ENV_PLUGIN, os.environ.get(ENV_PLUGIN))):
        if value:
            if not os.path.isfile(value):
                raise TrtSparseError(
                    "plugin library {} (from {}) does not exist; build it with "
                    "'cmake -S plugin -B build && cmake --build build -j2'".format(value, source)
                )
            return os.path.abspath(value)
    for root in (os.getcwd(), _REPO_ROOT):
        path = os.path.join(root, "build", "libtrt_sparse_plugin.so")
        if os.path.isfile(path):
            return os.path.abspath(path)
    return None


def plugin_missing_message():
    """One-line hint for a model with SparseConv2d nodes and no plugin library."""
    return (
        "the model has SparseConv2d nodes but no plugin library was found; build it with "
        "'cmake -S plugin -B build -DTENSORRT_ROOT=<TensorRT dir> && cmake --build build -j2' "
        "and pass --plugin build/libtrt_sparse_plugin.so (or set {})".format(ENV_PLUGIN)
    )


def file_sha256(path, chunk=1 << 20):
    """Hex sha256 of a file (used to record which plugin library an engine was built with)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while True:
            block = f.read(chunk)
            if not block:
                break
            h.update(block)
    return h.hexdigest()


_LOADED = {}


def registry_has_plugin(registry, name=None, version=None):
    """True when ``registry`` already holds the SparseConv2d creator (no error is logged when absent)."""
    from . import PLUGIN_NAME, PLUGIN_VERSION

    name = name or PLUGIN_NAME
    version = version or PLUGIN_VERSION
    creators = getattr(registry, "all_creators_recursive", None)  # includes parent registries (10.x+)
    if creators is None:
        creators = getattr(registry, "all_creators", None)
    if creators is None:
        creators = getattr(registry, "plugin_creator_list", None) or []
    for creator in creators:
        if getattr(creator, "name", None) == name and str(getattr(creator, "plugin_version", "")) == version:
            return True
    return False


def load_plugin_library(trt, path, logger=None, registry=None):
    """Load the plugin library into TensorRT's plugin registry; return its handle (or True if already there).

    TensorRT >= 10 and TensorRT-RTX: ``IPluginRegistry.load_library`` on ``registry``
    (default: the global one; TensorRT-RTX gives every Builder and Runtime its own,
    so pass ``builder.get_plugin_registry()`` / ``runtime.get_plugin_registry()``).
    The library exports getCreators/setLoggerFinder. TensorRT 8.x: ``ctypes.CDLL``
    with RTLD_GLOBAL (static creator registration) then ``init_libnvinfer_plugins``.
    """
    import ctypes

    path = os.path.abspath(path)
    if not os.path.isfile(path):
        raise TrtSparseError("plugin library {} does not exist".format(path))
    if flavour(trt) == "tensorrt" and version_tuple(trt)[0] < 10:
        key = (trt.__name__, path)
        if key in _LOADED:
            return _LOADED[key]
        try:
            handle = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
        except OSError as exc:
            raise TrtSparseError("cannot load plugin library {}: {}".format(path, exc))
        if logger is None:
            logger = trt.Logger(trt.Logger.WARNING)
        trt.init_libnvinfer_plugins(logger, "")
        _LOADED[key] = handle
        return handle
    if registry is None:
        registry = trt.get_plugin_registry()
    if registry_has_plugin(registry):
        return True
    try:
        handle = registry.load_library(path)
    except Exception as exc:  # the bindings raise on failure in some versions
        raise TrtSparseError("TensorRT could not load plugin library {}: {}".format(path, exc))
    if handle is None:
        raise TrtSparseError(
            "TensorRT could not load plugin library {} (it must export getCreators and "
            "setLoggerFinder and be built against this TensorRT major version; see the log above)".format(path)
        )
    return handle
