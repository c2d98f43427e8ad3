"""Kernel library binding without a GPU: lookup, output dims, weight validation messages."""
import numpy as np
import pytest

from trt_sparse import cuda as tcuda
from trt_sparse import format as fmt
from trt_sparse.errors import TrtSparseError

needs_lib = pytest.mark.skipif(tcuda.find_library() is None,
                               reason="kernel library not built (cmake -S plugin -B build && cmake --build build)")


class _FakeWeight(object):
    """Duck-typed SparseConvWeight that skips Python validation (to reach the C checks)."""

    def __init__(self, shape, row_offsets, indices, values):
        self.shape = shape
        self.row_offsets = np.asarray(row_offsets, np.int32)
        self.indices = np.asarray(indices, np.int32)
        self.values = np.asarray(values, np.float32)


def test_missing_library_message(monkeypatch, tmp_path):
    monkeypatch.setenv("TRT_SPARSE_KERNELS_LIB", str(tmp_path / "nope.so"))
    monkeypatch.setattr(tcuda, "_lib", None)
    monkeypatch.setattr(tcuda, "library_candidates", lambda: [str(tmp_path / "nope.so")])
    with pytest.raises(TrtSparseError, match="not found"):
        tcuda.load_library()


def test_pointer_of():
    assert tcuda.pointer_of(None) == 0
    assert tcuda.pointer_of(1234) == 1234

    class T(object):
        def data_ptr(self):
            return 77
    assert tcuda.pointer_of(T()) == 77


@needs_lib
@pytest.mark.parametrize("H,W,R,strides,pads,dil,expect", [
    (56, 56, 3, (1, 1), (1, 1, 1, 1), (1, 1), (56, 56)),
    (56, 56, 3, (2, 2), (1, 1, 1, 1), (1, 1), (28, 28)),
    (11, 9, 3, (1, 1), (2, 0, 1, 3), (1, 1), (12, 10)),
    (15, 14, 3, (1, 1), (2, 2, 2, 2), (2, 2), (15, 14)),
    (23, 23, 7, (2, 2), (3, 3, 3, 3), (1, 1), (12, 12)),
])
def test_output_dims_match_reference(H, W, R, strides, pads, dil, expect):
    from trt_sparse.reference import conv_output_size
    got = tcuda.output_dims((4, 3, R, R), H, W, strides, pads, dil)
    assert got == expect == conv_output_size(H, W, R, R, strides, pads, dil)


@needs_lib
def test_output_dims_empty_is_error():
    with pytest.raises(tcuda.KernelError, match="INVALID_ARGUMENT"):
        tcuda.output_dims((4, 3, 5, 5), 2, 2)


@needs_lib
@pytest.mark.parametrize("weight,msg", [
    (_FakeWeight((2, 1, 1, 1), [0, 1, 0], [0], [1.0]), "non-decreasing"),
    (_FakeWeight((1, 2, 1, 1), [0, 2], [1, 0], [1.0, 2.0]), "strictly increasing"),
    (_FakeWeight((1, 2, 1, 1), [0, 1], [5], [1.0]), "out of range"),
    (_FakeWeight((1, 2, 1, 1), [0, 1], [0], [np.inf]), "not finite"),
    (_FakeWeight((1, 2, 1, 1), [1, 1], [0], [1.0]), "row_offsets\\[0\\]"),
])
def test_plan_rejects_bad_weights(weight, msg):
    with pytest.raises(tcuda.KernelError, match=msg):
        tcuda.SparseConvPlan(weight)


@needs_lib
def test_plan_rejects_bad_geometry():
    sw = fmt.pack(np.ones((2, 2, 3, 3), np.float32))
    with pytest.raises(tcuda.KernelError, match="strides"):
        tcuda.SparseConvPlan(sw, strides=(0, 1))
    with pytest.raises(tcuda.KernelError, match="activation"):
        tcuda.SparseConvPlan(sw, activation=5)
    with pytest.raises(TrtSparseError, match="bias"):
        tcuda.SparseConvPlan(sw, bias=np.zeros(3))
    with pytest.raises(TrtSparseError, match="dtype"):
        tcuda.SparseConvPlan(sw, dtype="int8")
