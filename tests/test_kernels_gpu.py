"""GPU correctness of the CUDA kernels (run on the device: pytest -m gpu tests/test_kernels_gpu.py).

Every kernel variant that can run a case is checked against the float64
reference (trt_sparse.reference.sparse_conv2d) by ||out-ref||/||ref||: fp32 < 1e-5,
fp16 I/O (fp32 accumulate) < 2e-3. Fresh random data for every check (seed
printed on failure), output poisoned with NaN before each run.
"""
import secrets

import numpy as np
import pytest

from kernel_cases import CASES, random_sparse_weight
from trt_sparse import reference

pytestmark = pytest.mark.gpu

torch = pytest.importorskip("torch", reason="GPU tests need torch for device buffers")
if not torch.cuda.is_available():
    pytest.skip("no CUDA GPU available", allow_module_level=True)
from trt_sparse import cuda as tcuda  # noqa: E402

if tcuda.find_library() is None:
    pytest.skip("kernel library not built (cmake -S plugin -B build && cmake --build build)", allow_module_level=True)

TOL = {"fp32": 1e-5, "fp16": 2e-3}
TOL_TF32 = 3e-3  # fp32 I/O with TF32 tensor-core math (10-bit mantissa products, fp32 accumulation)


def _rel_err(out, ref):
    out = np.asarray(out, dtype=np.float64)
    assert np.all(np.isfinite(out)), "non-finite output (unwritten element or overflow)"
    den = np.linalg.norm(ref)
    return np.linalg.norm(out - ref) / (den if den > 0 else 1.0) if den > 0 else np.linalg.norm(out - ref)


def _assert_variants_bit_identical(plan_a, plan_b, xt, ref, dtype, prefixes, label, differ_msg):
    """Run every variant whose name starts with one of `prefixes` on two plans of the same weights (built under
    different switches): the outputs (NaN-poisoned before each launch) must be bit-identical and within the dtype's
    tolerance of the float64 reference `ref`."""
    N, _, H, W = xt.shape
    names_a, names_b = plan_a.variants(N, H, W), plan_b.variants(N, H, W)
    # the switch may add or remove other families (e.g. the burst kernel needs TMA); the compared ones must match
    chosen = [n for n in names_a if n.startswith(prefixes)]
    assert chosen, names_a
    assert chosen == [n for n in names_b if n.startswith(prefixes)], (names_a, names_b)
    y = torch.empty(plan_a.output_shape(tuple(xt.shape)), device="cuda", dtype=xt.dtype)
    for n in chosen:
        outs = []
        for plan, names in ((plan_a, names_a), (plan_b, names_b)):
            y.fill_(float("nan"))
            plan.enqueue_variant(names.index(n), xt, y)
            torch.cuda.synchronize()
            outs.append(y.clone())
        assert torch.equal(outs[0], outs[1]), "{} {}: {}".format(label, n, differ_msg)
        err = _rel_err(outs[0].float().cpu().numpy(), ref)
        assert err < TOL[dtype], "{} {}: rel err {}".format(label, n, err)


def _run_case(c, dtype, layout="NCHW", all_variants=True, allow_tf32=False):
    seed = secrets.randbits(32)
    rng = np.random.default_rng(seed)
    sw = random_sparse_weight(rng, c.K, c.C, c.R, c.S, c.sparsity, c.pattern)
    bias = rng.standard_normal(c.K).astype(np.float32) if c.bias else None
    x = rng.standard_normal((c.N, c.C, c.H, c.W)).astype(np.float32)
    tdt = torch.float16 if dtype == "fp16" else torch.float32
    xt = torch.from_numpy(x).to("cuda", tdt)
    x_used = xt.float().cpu().numpy().astype(np.float64)  # the values the kernel sees
    ref = reference.sparse_conv2d(x_used, sw, bias, c.strides, c.pads, c.dilations, c.activation, 0.0, 6.0)
    plan = tcuda.SparseConvPlan(sw, bias, c.strides, c.pads, c.dilations, c.activation, 0.0, 6.0, dtype, layout,
                                allow_tf32=allow_tf32)
    if layout == "NHWC":
        xt = xt.permute(0, 2, 3, 1).contiguous()
    out_shape = plan.output_shape(tuple(xt.shape))
    y = torch.empty(out_shape, device="cuda", dtype=tdt)
    names = plan.variants(c.N, c.H, c.W) if all_variants else [None]
    assert names, "no kernel variant for {}".format(c)
    errs = {}
    for i, name in enumerate(names):
        y.fill_(float("nan"))
        if name is None:
            plan.enqueue(xt, y)
        else:
            plan.enqueue_variant(i, xt, y)
        torch.cuda.synchronize()
        out = y.float().cpu().numpy()
        if layout == "NHWC":
            out = out.transpose(0, 3, 1, 2)
        errs[name or "default"] = _rel_err(out, ref)
    # TF32 variants (and the default choice of a TF32-allowed plan) get the TF32 tolerance
    bad = {k: v for k, v in errs.items()
           if not v < (TOL_TF32 if k.endswith(",tf32)") or (allow_tf32 and k == "default") else TOL[dtype])}
    assert not bad, "case {} dtype {} layout {} seed {}: rel err {}".format(c.name, dtype, layout, seed, bad)
    return plan, errs


@pytest.mark.parametrize("dtype", ["fp32", "fp16"])
@pytest.mark.parametrize("c", CASES, ids=[c.name for c in CASES])
def test_every_variant_matches_reference(c, dtype):
    _run_case(c, dtype)


@pytest.mark.parametrize("c", [c for c in CASES if c.name in ("basic", "odd_sizes", "stride2", "dilation2",
                                                               "5x5", "batch3", "clip", "1x1", "skewed")],
                         ids=lambda c: c.name)
@pytest.mark.parametrize("dtype", ["fp32", "fp16"])
def test_nhwc_matches_reference(c, dtype):
    """NHWC plans (the plugin's kHWC / kHWC8 I/O): every variant, including the staged smem and (fp16, sm_80+)
    tensor-core kernels, which stage channel-last input into their channel-major tiles."""
    plan, errs = _run_case(c, dtype, layout="NHWC")
    nchw = tcuda.SparseConvPlan(random_sparse_weight(np.random.default_rng(0), c.K, c.C, c.R, c.S, c.sparsity,
                                                     c.pattern), None, c.strides, c.pads, c.dilations,
                                c.activation, 0.0, 6.0, dtype, "NCHW")
    staged = {n.split("(")[0] for n in nchw.variants(c.N, c.H, c.W)} & {"smem", "mma"}
    # every staged family the NCHW plan offers for this shape, the NHWC plan offers too
    assert staged <= {n.split("(")[0] for n in errs}, (staged, sorted(errs))


@pytest.mark.parametrize("c", [c for c in CASES if c.name in ("skewed", "resnet_like_14", "batch3", "stride2")],
                         ids=lambda c: c.name)
def test_tuned_and_default_choice(c):
    """The heuristic choice, then the tuned choice, both produce the reference result."""
    plan, _ = _run_case(c, "fp32", all_variants=False)
    rng = np.random.default_rng(secrets.randbits(32))
    x = torch.from_numpy(rng.standard_normal((c.N, c.C, c.H, c.W)).astype(np.float32)).cuda()
    y = torch.empty(plan.output_shape(tuple(x.shape)), device="cuda")
    plan.tune(x, y)
    assert "tuned[" in plan.describe()
    _run_case(c, "fp32", all_variants=False)


def test_random_shapes():
    """Fresh random geometries (3x3 / 1x1 fast paths and others), every variant."""
    rng = np.random.default_rng(secrets.randbits(32))
    from kernel_cases import case
    for _ in range(12):
        R = int(rng.choice([1, 3, 3, 5]))
        st = int(rng.choice([1, 1, 2, 3]))
        pads = tuple(int(v) for v in rng.integers(0, R // 2 + 2, size=4))
        H, W = int(rng.integers(R, 30)), int(rng.integers(R, 30))
        c = case("random", N=int(rng.integers(1, 4)), C=int(rng.integers(1, 40)), K=int(rng.integers(1, 50)),
                 H=H, W=W, R=R, S=R, strides=(st, st), pads=pads, sparsity=float(rng.choice([0.0, 0.5, 0.9, 0.97])),
                 activation=int(rng.integers(0, 3)))
        for dtype in ("fp32", "fp16"):
            _run_case(c, dtype)


def test_stream_and_cupy_pointers():
    """Plans run on a non-default stream, and on raw integer pointers."""
    from kernel_cases import case
    c = case("stream", C=16, K=16, H=12, W=12)
    rng = np.random.default_rng(secrets.randbits(32))
    sw = random_sparse_weight(rng, c.K, c.C, 3, 3, 0.9)
    x = torch.from_numpy(rng.standard_normal((1, 16, 12, 12)).astype(np.float32)).cuda()
    ref = reference.sparse_conv2d(x.cpu().numpy().astype(np.float64), sw, None, (1, 1), (1, 1, 1, 1))
    plan = tcuda.SparseConvPlan(sw, None, (1, 1), (1, 1, 1, 1))
    y = torch.full((1, 16, 12, 12), float("nan"), device="cuda")
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        plan.enqueue(int(x.data_ptr()), int(y.data_ptr()), input_shape=(1, 16, 12, 12))
    s.synchronize()
    assert _rel_err(y.cpu().numpy(), ref) < 1e-5


def test_smem_variants_offered():
    """The shared-memory kernel is a candidate for NCHW plans of any geometry (3x3, 5x5, stride 3, dilation)."""
    rng = np.random.default_rng(secrets.randbits(32))
    for R, st, dl in ((3, 1, 1), (5, 1, 1), (3, 3, 1), (3, 1, 2), (1, 2, 1)):
        sw = random_sparse_weight(rng, 16, 8, R, R, 0.9)
        plan = tcuda.SparseConvPlan(sw, None, (st, st), (1, 1, 1, 1), (dl, dl))
        names = plan.variants(1, 20, 24)
        assert any(n.startswith("smem(") for n in names), (R, st, dl, names)


@pytest.mark.parametrize("dtype", ["fp32", "fp16"])
def test_reuse_variants_offered(dtype):
    """The register-reuse kernel (half2 for fp16) is a candidate for NCHW 3x3 stride 1 / 1x1 stride 1
    (and fp32 3x3 stride 2) plans, and not for geometries it has no body for (5x5, dilation 2)."""
    rng = np.random.default_rng(secrets.randbits(32))
    for R, st, dl, expect in ((3, 1, 1, True), (1, 1, 1, True), (3, 2, 1, dtype == "fp32"), (5, 1, 1, False),
                              (3, 1, 2, False)):
        sw = random_sparse_weight(rng, 16, 8, R, R, 0.9)
        plan = tcuda.SparseConvPlan(sw, None, (st, st), (R // 2,) * 4, (dl, dl), dtype=dtype)
        names = plan.variants(1, 20, 24)
        reuse = [n for n in names if n.startswith("reuse(")]
        assert bool(reuse) == expect, (R, st, dl, names)
        assert all(("half2" in n) == (dtype == "fp16") for n in reuse), reuse


def test_half2_reuse_not_offered_on_near_dense_weights():
    """half2 partial sums over 16 input channels exceed the fp16 tolerance on near-dense weights (2.3e-3 at 0%
    sparsity, C = 33): fp16 plans with more than 60% nonzeros do not list the half2 reuse variants; fp32 plans of
    the same weights still list reuse (fp32 arithmetic)."""
    rng = np.random.default_rng(secrets.randbits(32))
    sw = random_sparse_weight(rng, 16, 33, 3, 3, 0.0)
    for dtype, expect in (("fp16", False), ("fp32", True)):
        plan = tcuda.SparseConvPlan(sw, None, (1, 1), (1, 1, 1, 1), (1, 1), dtype=dtype)
        names = plan.variants(1, 13, 14)
        assert any(n.startswith("reuse(") for n in names) == expect, (dtype, names)


@pytest.mark.parametrize("dtype", ["fp32", "fp16"])
@pytest.mark.parametrize("aligned", [True, False], ids=["aligned", "unaligned"])
def test_smem_multichunk_and_unaligned_input(dtype, aligned):
    """Many input-channel chunks (double buffer), W % 4 == 0 with an aligned input (vector copies) and
    with an input offset by one element (scalar copies); every variant against the reference."""
    from kernel_cases import case
    c = case("multichunk", N=2, C=150, K=40, H=18, W=20, sparsity=0.9, activation=1)
    seed = secrets.randbits(32)
    rng = np.random.default_rng(seed)
    sw = random_sparse_weight(rng, c.K, c.C, 3, 3, c.sparsity)
    bias = rng.standard_normal(c.K).astype(np.float32)
    tdt = torch.float16 if dtype == "fp16" else torch.float32
    n_el = c.N * c.C * c.H * c.W
    store = torch.from_numpy(rng.standard_normal(n_el + 1).astype(np.float32)).to("cuda", tdt)
    xt = (store[:n_el] if aligned else store[1:]).view(c.N, c.C, c.H, c.W)
    ref = reference.sparse_conv2d(xt.float().cpu().numpy().astype(np.float64), sw, bias, c.strides, c.pads,
                                  c.dilations, c.activation)
    plan = tcuda.SparseConvPlan(sw, bias, c.strides, c.pads, c.dilations, c.activation, 0.0, 6.0, dtype)
    y = torch.empty(plan.output_shape(tuple(xt.shape)), device="cuda", dtype=tdt)
    names = plan.variants(c.N, c.H, c.W)
    errs = {}
    for i, name in enumerate(names):
        y.fill_(float("nan"))
        plan.enqueue_variant(i, xt, y)
        torch.cuda.synchronize()
        errs[name] = _rel_err(y.float().cpu().numpy(), ref)
    bad = {k: v for k, v in errs.items() if not v < TOL[dtype]}
    assert not bad, "seed {} dtype {} aligned {}: {}".format(seed, dtype, aligned, bad)


# (name, C, K, R, stride, pads, dilation, N, H, W): TMA-eligible inputs (W x elem a multiple of 16 bytes) with pads,
# strides, a channel tail (C not a multiple of the chunk), tiles hanging over the map, and channels enough for clusters
TMA_SHAPES = [
    ("s1_w16", 24, 20, 3, 1, (1, 1, 1, 1), 1, 2, 15, 16),
    ("s1_w56_tail", 70, 33, 3, 1, (1, 1, 1, 1), 1, 1, 56, 56),
    ("s1_pad2_5x5", 19, 17, 5, 1, (2, 2, 2, 2), 1, 1, 21, 24),
    ("s2_w40", 36, 24, 3, 2, (1, 1, 1, 1), 1, 3, 23, 40),
    ("dil2_asym", 20, 12, 3, 1, (2, 1, 0, 2), 2, 1, 18, 32),
    ("c512_w8_cluster", 512, 24, 3, 1, (1, 1, 1, 1), 1, 1, 8, 8),
    ("1x1_w32", 64, 40, 1, 1, (0, 0, 0, 0), 1, 2, 9, 32),
    ("s1_pad0_w24", 20, 16, 3, 1, (0, 0, 0, 0), 1, 1, 14, 24),
    ("s2_pad0_w48", 40, 24, 3, 2, (0, 0, 1, 1), 1, 2, 29, 48),
]


@pytest.mark.parametrize("dtype", ["fp32", "fp16"])
@pytest.mark.parametrize("shape", TMA_SHAPES, ids=[t[0] for t in TMA_SHAPES])
def test_tma_staging_matches_cp_async(shape, dtype, monkeypatch):
    """sm_90: every smem and tensor-core (mma) variant staged by the Tensor Memory Accelerator gives bit-identical
    outputs to the same variant staged by per-thread cp.async (TRT_SPARSE_NO_TMA=1 at plan creation) and matches
    the reference
    (zero padding, the last chunk's missing channels and tiles past the map edge come from TMA's out-of-bounds
    fill)."""
    if torch.cuda.get_device_capability()[0] < 9:
        pytest.skip("TMA staging needs sm_90+")
    name, C, K, R, st, pads, dl, N, H, W = shape
    seed = secrets.randbits(32)
    rng = np.random.default_rng(seed)
    sw = random_sparse_weight(rng, K, C, R, R, 0.9)
    bias = rng.standard_normal(K).astype(np.float32)
    tdt = torch.float16 if dtype == "fp16" else torch.float32
    xt = torch.from_numpy(rng.standard_normal((N, C, H, W)).astype(np.float32)).to("cuda", tdt)
    ref = reference.sparse_conv2d(xt.float().cpu().numpy().astype(np.float64), sw, bias, (st, st), pads, (dl, dl), 1)
    monkeypatch.delenv("TRT_SPARSE_NO_TMA", raising=False)
    plan_tma = tcuda.SparseConvPlan(sw, bias, (st, st), pads, (dl, dl), 1, 0.0, 6.0, dtype)
    monkeypatch.setenv("TRT_SPARSE_NO_TMA", "1")
    plan_cp = tcuda.SparseConvPlan(sw, bias, (st, st), pads, (dl, dl), 1, 0.0, 6.0, dtype)
    monkeypatch.delenv("TRT_SPARSE_NO_TMA")
    # (fp16 launches use TMA only where every box starts 16-byte aligned, e.g. pad_left 0; the others fall back)
    assert " tma=1" in plan_tma.describe() and " tma=0" in plan_cp.describe()
    _assert_variants_bit_identical(plan_tma, plan_cp, xt, ref, dtype, ("smem(", "mma("),
                                   "seed {} {}".format(seed, name), "TMA and cp.async outputs differ")


# (name, C, K, R, stride, pads, dilation, N, H, W): TMA-mappable rows (W x elem a multiple of 16 bytes) for the
# single-stage (burst) kernel's two stagings; clusters (C large), pads 0-2, stride 2, a batch
BURST_SHAPES = [
    ("w16_pad1", 40, 24, 3, 1, (1, 1, 1, 1), 1, 2, 13, 16),
    ("w32_c300", 300, 20, 3, 1, (1, 1, 1, 1), 1, 1, 9, 32),
    ("w16_pad2_5x5", 24, 16, 5, 1, (2, 2, 2, 2), 1, 1, 11, 16),
    ("w24_s2_pad0", 32, 16, 3, 2, (0, 0, 1, 1), 1, 1, 17, 24),
]


@pytest.mark.parametrize("stages", [None, "1", "3"], ids=["stages_default", "stages1", "stages3"])
@pytest.mark.parametrize("dtype", ["fp32", "fp16"])
@pytest.mark.parametrize("shape", BURST_SHAPES, ids=[t[0] for t in BURST_SHAPES])
def test_burst_row_slabs_match_tma(shape, dtype, stages, monkeypatch):
    """sm_90: every burst variant run on an input that TMA maps (aligned: staged in `stages` boxes, each on its own
    mbarrier) and on the same values offset by one element (TMA cannot map it: one bulk copy of the rows' span,
    clamped to the tensor, padded in shared memory) gives bit-identical outputs within the dtype's tolerance of the
    reference."""
    if torch.cuda.get_device_capability()[0] < 9:
        pytest.skip("the burst kernel needs sm_90+")
    if stages is None:
        monkeypatch.delenv("TRT_SPARSE_BURST_STAGES", raising=False)
    else:
        monkeypatch.setenv("TRT_SPARSE_BURST_STAGES", stages)
    name, C, K, R, st, pads, dl, N, H, W = shape
    seed = secrets.randbits(32)
    rng = np.random.default_rng(seed)
    sw = random_sparse_weight(rng, K, C, R, R, 0.9)
    bias = rng.standard_normal(K).astype(np.float32)
    tdt = torch.float16 if dtype == "fp16" else torch.float32
    n_el = N * C * H * W
    store = torch.from_numpy(rng.standard_normal(n_el + 1).astype(np.float32)).to("cuda", tdt)
    x_al = store[:n_el].view(N, C, H, W)
    x_off = torch.empty(n_el + 1, device="cuda", dtype=tdt)
    x_off[1:] = store[:n_el]
    x_off = x_off[1:].view(N, C, H, W)
    ref = reference.sparse_conv2d(x_al.float().cpu().numpy().astype(np.float64), sw, bias, (st, st), pads, (dl, dl), 1)
    plan = tcuda.SparseConvPlan(sw, bias, (st, st), pads, (dl, dl), 1, 0.0, 6.0, dtype)
    assert " burst_stages={}".format(stages or 4) in plan.describe()
    names = plan.variants(N, H, W)
    chosen = [(i, n) for i, n in enumerate(names) if n.startswith("burst(")]
    if not chosen:
        pytest.skip("no burst variant offered for {} (library without sm_90 burst code?)".format(name))
    y = torch.empty(plan.output_shape((N, C, H, W)), device="cuda", dtype=tdt)
    for i, n in chosen:
        outs = []
        for xt in (x_al, x_off):
            y.fill_(float("nan"))
            plan.enqueue_variant(i, xt, y)
            torch.cuda.synchronize()
            outs.append(y.clone())
        assert torch.equal(outs[0], outs[1]), "seed {} {} {}: TMA and row-slab outputs differ".format(seed, name, n)
        err = _rel_err(outs[0].float().cpu().numpy(), ref)
        assert err < TOL[dtype], "seed {} {} {}: rel err {}".format(seed, name, n, err)


# (name, C = K, N, H, W): chains of one plan (its output is its next input); burst TMA rows (W 16 / 32), the span
# path (W 14), a batch of 3 (several waves of blocks)
PDL_SHAPES = [
    ("c32_w16", 32, 1, 12, 16),
    ("c64_w14", 64, 1, 14, 14),
    ("c48_n3_w32", 48, 3, 20, 32),
]


def _pdl_chain(plan, index, x, x2):
    """conv(x) -> y1, conv(y1) -> y2 (reads what the launch before wrote), conv(x2) -> y1 (overwrites what the launch
    before reads), all enqueued on one stream without a host synchronization, outputs NaN-poisoned in-stream first."""
    y1 = torch.empty_like(x)
    y2 = torch.empty_like(x)
    y1.fill_(float("nan"))
    y2.fill_(float("nan"))
    plan.enqueue_variant(index, x, y1)
    plan.enqueue_variant(index, y1, y2)
    plan.enqueue_variant(index, x2, y1)
    torch.cuda.synchronize()
    return y1, y2


@pytest.mark.parametrize("dtype", ["fp32", "fp16"])
@pytest.mark.parametrize("shape", PDL_SHAPES, ids=[t[0] for t in PDL_SHAPES])
def test_pdl_chains_match_plain_launches(shape, dtype, monkeypatch):
    """sm_90: with programmatic dependent launch (TRT_SPARSE_PDL=1 at plan creation) every smem, tensor-core and burst
    variant, chained back to back on one stream (read-after-write and write-after-read on the same buffer), gives
    bit-identical outputs to plain launches, and each step matches the float64 reference: the kernels wait for the
    previous kernel before they read the input or write the output."""
    if torch.cuda.get_device_capability()[0] < 9:
        pytest.skip("programmatic dependent launch needs sm_90+")
    name, C, N, H, W = shape
    seed = secrets.randbits(32)
    rng = np.random.default_rng(seed)
    sw = random_sparse_weight(rng, C, C, 3, 3, 0.9)
    bias = rng.standard_normal(C).astype(np.float32)
    tdt = torch.float16 if dtype == "fp16" else torch.float32
    x = torch.from_numpy(rng.standard_normal((N, C, H, W)).astype(np.float32)).to("cuda", tdt)
    x2 = torch.from_numpy(rng.standard_normal((N, C, H, W)).astype(np.float32)).to("cuda", tdt)
    args = (sw, bias, (1, 1), (1, 1, 1, 1), (1, 1), 1, 0.0, 6.0, dtype)
    monkeypatch.delenv("TRT_SPARSE_PDL", raising=False)
    plain = tcuda.SparseConvPlan(*args)
    monkeypatch.setenv("TRT_SPARSE_PDL", "1")
    pdl = tcuda.SparseConvPlan(*args)
    monkeypatch.delenv("TRT_SPARSE_PDL")
    assert " pdl=0" in plain.describe() and " pdl=1" in pdl.describe()
    names = plain.variants(N, H, W)
    assert names == pdl.variants(N, H, W)
    chosen = [(i, n) for i, n in enumerate(names) if n.startswith(("smem(", "mma(", "burst("))]
    assert chosen, names

    def ref_of(t):
        return reference.sparse_conv2d(t.float().cpu().numpy().astype(np.float64), sw, bias, (1, 1), (1, 1, 1, 1),
                                       (1, 1), 1)
    ref2 = ref_of(x2)
    for i, n in chosen:
        label = "seed {} {} {}".format(seed, name, n)
        y1_plain, y2_plain = _pdl_chain(plain, i, x, x2)
        y1_pdl, y2_pdl = _pdl_chain(pdl, i, x, x2)
        assert torch.equal(y1_plain, y1_pdl) and torch.equal(y2_plain, y2_pdl), label + ": PDL and plain chains differ"
        err = _rel_err(y1_pdl.float().cpu().numpy(), ref2)
        assert err < TOL[dtype], "{}: last step rel err {}".format(label, err)
        y1 = torch.empty_like(x)
        pdl.enqueue_variant(i, x, y1)
        torch.cuda.synchronize()
        err = _rel_err(y2_pdl.float().cpu().numpy(), ref_of(y1))
        assert err < TOL[dtype], "{}: second step rel err {}".format(label, err)


# (name, C, K, R, stride, pads (top, left, bottom, right), dilation, N, H, W, input offset in elements): W even but not a
# multiple of 4 (pair staging), left pads 0-3, strides, dilation, 5x5, tiles past the map edge, channel tails; an input
# offset by one element (pairs misaligned: element-wise staging) must give the same result too
PAIR_SHAPES = [
    ("w14_pad1", 40, 24, 3, 1, (1, 1, 1, 1), 1, 1, 14, 14, 0),
    ("w10_pad0", 24, 20, 3, 1, (0, 0, 0, 0), 1, 2, 9, 10, 0),
    ("w22_pad2_5x5", 19, 17, 5, 1, (2, 2, 2, 2), 1, 1, 13, 22, 0),
    ("w30_pad3_asym", 12, 16, 3, 1, (1, 3, 0, 2), 1, 1, 11, 30, 0),
    ("w26_s2", 36, 24, 3, 2, (1, 1, 1, 1), 1, 3, 15, 26, 0),
    ("w18_dil2", 20, 12, 3, 1, (2, 2, 2, 2), 2, 1, 12, 18, 0),
    ("w14_c300", 300, 40, 3, 1, (1, 1, 1, 1), 1, 1, 14, 14, 0),
    ("w6_1x1", 64, 40, 1, 1, (0, 0, 0, 0), 1, 2, 9, 6, 0),
    ("w14_offset1", 40, 24, 3, 1, (1, 1, 1, 1), 1, 1, 14, 14, 1),
]


@pytest.mark.parametrize("dtype", ["fp32", "fp16"])
@pytest.mark.parametrize("shape", PAIR_SHAPES, ids=[t[0] for t in PAIR_SHAPES])
def test_pair_staging_matches_elementwise(shape, dtype, monkeypatch):
    """sm_80+: NCHW inputs with an even W that is not a multiple of 4 are staged in pairs of elements (4- / 8-byte
    cp.async) where the input allows; every staged variant (smem, reuse, mma) gives bit-identical outputs to the same
    variant staged element by element (TRT_SPARSE_NO_PAIR_STAGE=1 at plan creation) and matches the reference."""
    if torch.cuda.get_device_capability()[0] < 8:
        pytest.skip("pair staging needs sm_80+ (cp.async)")
    name, C, K, R, st, pads, dl, N, H, W, off = shape
    seed = secrets.randbits(32)
    rng = np.random.default_rng(seed)
    sw = random_sparse_weight(rng, K, C, R, R, 0.9)
    bias = rng.standard_normal(K).astype(np.float32)
    tdt = torch.float16 if dtype == "fp16" else torch.float32
    n_el = N * C * H * W
    store = torch.from_numpy(rng.standard_normal(n_el + 1).astype(np.float32)).to("cuda", tdt)
    xt = store[off:off + n_el].view(N, C, H, W)
    ref = reference.sparse_conv2d(xt.float().cpu().numpy().astype(np.float64), sw, bias, (st, st), pads, (dl, dl), 1)
    monkeypatch.delenv("TRT_SPARSE_NO_PAIR_STAGE", raising=False)
    monkeypatch.setenv("TRT_SPARSE_NO_TMA", "1")  # the cp.async staging path on sm_90 too
    plan_pair = tcuda.SparseConvPlan(sw, bias, (st, st), pads, (dl, dl), 1, 0.0, 6.0, dtype)
    monkeypatch.setenv("TRT_SPARSE_NO_PAIR_STAGE", "1")
    plan_elem = tcuda.SparseConvPlan(sw, bias, (st, st), pads, (dl, dl), 1, 0.0, 6.0, dtype)
    assert " pairs=1" in plan_pair.describe() and " pairs=0" in plan_elem.describe()
    _assert_variants_bit_identical(plan_pair, plan_elem, xt, ref, dtype, ("smem(", "mma(", "reuse("),
                                   "seed {} {}".format(seed, name), "pair and element-wise staging differ")


@pytest.mark.parametrize("staging", ["tma", "cp_async"])
@pytest.mark.parametrize("shape", [
    # (name, C, K, H, W, layout): 128-channel chunks with a tail chunk, several full ones, NHWC (element-wise
    # staging)
    ("c320_h14", 320, 48, 14, 14, "NCHW"),
    ("c512_h7", 512, 64, 7, 7, "NCHW"),
    ("c200_h10_nhwc", 200, 40, 10, 10, "NHWC"),
], ids=lambda s: s[0])
@pytest.mark.parametrize("dtype", ["fp32", "fp16"])
def test_large_staging_configs_match_reference(dtype, shape, staging, monkeypatch):
    """Tensor-core configs with 96 KB of staging (opt-in shared memory, 128-channel chunks: ',stage=96k' in the
    variant name) are offered on sm_90 where they give larger chunks than 48 KB, and every one matches the
    reference, staged by TMA or by cp.async (fp16, and TF32 for fp32 I/O)."""
    name, C, K, H, W, layout = shape
    if torch.cuda.get_device_capability()[0] < 9:
        pytest.skip("96 KB staging configs are checked on sm_90+ (their opt-in budget)")
    seed = secrets.randbits(32)
    rng = np.random.default_rng(seed)
    sw = random_sparse_weight(rng, K, C, 3, 3, 0.9)
    bias = rng.standard_normal(K).astype(np.float32)
    tdt = torch.float16 if dtype == "fp16" else torch.float32
    xt = torch.from_numpy(rng.standard_normal((1, C, H, W)).astype(np.float32)).to("cuda", tdt)
    ref = reference.sparse_conv2d(xt.float().cpu().numpy().astype(np.float64), sw, bias, (1, 1), (1, 1, 1, 1),
                                  (1, 1), 1)
    if layout == "NHWC":
        xt = xt.permute(0, 2, 3, 1).contiguous()
    if staging == "cp_async":
        monkeypatch.setenv("TRT_SPARSE_NO_TMA", "1")
    else:
        monkeypatch.delenv("TRT_SPARSE_NO_TMA", raising=False)
    plan = tcuda.SparseConvPlan(sw, bias, (1, 1), (1, 1, 1, 1), (1, 1), 1, 0.0, 6.0, dtype, layout,
                                allow_tf32=True)
    names = plan.variants(1, H, W)
    big = [(i, n) for i, n in enumerate(names) if ",stage=96k" in n]
    assert big, "seed {} {}: no 96 KB staging config among {}".format(seed, name, names)
    y = torch.empty((1, K, H, W) if layout == "NCHW" else (1, H, W, K), device="cuda", dtype=tdt)
    for i, n in big:
        y.fill_(float("nan"))
        plan.enqueue_variant(i, xt, y)
        torch.cuda.synchronize()
        out = y.float().cpu().numpy()
        if layout == "NHWC":
            out = out.transpose(0, 3, 1, 2)
        err = _rel_err(out, ref)
        tol = TOL_TF32 if n.endswith(",tf32)") else TOL[dtype]
        assert err < tol, "seed {} {} {}: rel err {}".format(seed, name, n, err)


# (name, C, K, R, stride (h, w), pads, dilation, N, H, W, input offset in elements, sparsity): the half2 smem layouts'
# staging paths -- 4-word units (W % 4 == 0, aligned input) and single words (odd W, W % 4 == 2, offset input) --,
# the fixed-pitch and runtime-pitch bodies (pad 1 vs pad 0 / 2, 5x5, dilation 2, stride_h 2), tiles cut by the map's
# edges, C = 1, several input-channel chunks, empty output channels (100% sparsity), clusters (small maps)
H2_SHAPES = [
    ("w20_pad1", 24, 40, 3, (1, 1), (1, 1, 1, 1), 1, 2, 18, 20, 0, 0.9),
    ("w17_odd", 9, 13, 3, (1, 1), (1, 1, 1, 1), 1, 1, 13, 17, 0, 0.8),
    ("w14_even", 40, 24, 3, (1, 1), (1, 1, 1, 1), 1, 1, 14, 14, 0, 0.9),
    ("w20_offset1", 24, 40, 3, (1, 1), (1, 1, 1, 1), 1, 1, 18, 20, 1, 0.9),
    ("w36_pad0", 16, 20, 3, (1, 1), (0, 0, 0, 0), 1, 1, 19, 36, 0, 0.9),
    ("w24_pad2_dil2", 16, 24, 3, (1, 1), (2, 2, 2, 2), 2, 1, 20, 24, 0, 0.9),
    ("w22_5x5", 19, 17, 5, (1, 1), (2, 2, 2, 2), 1, 1, 13, 22, 0, 0.9),
    ("w28_sh2", 20, 16, 3, (2, 1), (1, 1, 1, 1), 1, 1, 27, 28, 0, 0.9),
    ("w70_asym", 12, 16, 3, (1, 1), (1, 3, 0, 2), 1, 1, 9, 70, 0, 0.9),
    ("c1", 1, 8, 3, (1, 1), (1, 1, 1, 1), 1, 1, 11, 12, 0, 0.5),
    ("c200_multichunk", 200, 24, 3, (1, 1), (1, 1, 1, 1), 1, 1, 14, 16, 0, 0.9),
    ("w7_c512_cluster", 512, 64, 3, (1, 1), (1, 1, 1, 1), 1, 1, 7, 7, 0, 0.95),
    ("all_zero", 16, 8, 3, (1, 1), (1, 1, 1, 1), 1, 1, 12, 16, 0, 1.0),
    ("1x1", 32, 24, 1, (1, 1), (0, 0, 0, 0), 1, 1, 15, 32, 0, 0.9),
]


@pytest.mark.parametrize("shape", H2_SHAPES, ids=[t[0] for t in H2_SHAPES])
def test_half2_smem_variants_match_reference(shape):
    """fp16 NCHW plans with stride_w 1 offer half2 smem variants (a lane's two pixels of a row in one staged word,
    HFMA2 with fp16 weights, fp16 partial sums of <= 16 nonzeros flushed into fp32); each matches the float64
    reference within the fp16 tolerance on every staging path and geometry, with empty output channels giving
    exactly the bias (+ ReLU)."""
    name, C, K, R, st, pads, dl, N, H, W, off, sparsity = shape
    seed = secrets.randbits(32)
    rng = np.random.default_rng(seed)
    sw = random_sparse_weight(rng, K, C, R, R, sparsity)
    bias = rng.standard_normal(K).astype(np.float32)
    n_el = N * C * H * W
    store = torch.from_numpy(rng.standard_normal(n_el + 1).astype(np.float32)).to("cuda", torch.float16)
    xt = store[off:off + n_el].view(N, C, H, W)
    ref = reference.sparse_conv2d(xt.float().cpu().numpy().astype(np.float64), sw, bias, st, pads, (dl, dl), 1)
    plan = tcuda.SparseConvPlan(sw, bias, st, pads, (dl, dl), 1, 0.0, 6.0, "fp16")
    assert " h2=1" in plan.describe()
    names = plan.variants(N, H, W)
    h2 = [(i, n) for i, n in enumerate(names) if n.startswith("smem(") and n.endswith(",half2)")]
    assert h2, "seed {} {}: no half2 smem variant in {}".format(seed, name, names)
    y = torch.empty(plan.output_shape(tuple(xt.shape)), device="cuda", dtype=torch.float16)
    for i, n in h2:
        y.fill_(float("nan"))
        plan.enqueue_variant(i, xt, y)
        torch.cuda.synchronize()
        out = y.float().cpu().numpy()
        err = _rel_err(out, ref)
        assert err < TOL["fp16"], "seed {} {} {}: rel err {}".format(seed, name, n, err)
        if sparsity == 1.0:  # no nonzero: relu(bias) rounded to fp16, exactly
            expect = np.maximum(bias, 0).astype(np.float16).astype(np.float32)[None, :, None, None]
            assert np.array_equal(out, np.broadcast_to(expect, out.shape)), (seed, n)


def test_half2_smem_offered_only_where_it_applies(monkeypatch):
    """Half2 smem layouts: fp16 NCHW with stride_w 1 only (not fp32, NHWC or stride_w 2), not on near-dense weights
    (> 60% nonzeros), not with weights that overflow fp16, and not with TRT_SPARSE_NO_H2=1 (A/B switch)."""
    rng = np.random.default_rng(secrets.randbits(32))
    sw = random_sparse_weight(rng, 16, 24, 3, 3, 0.9)

    def h2_names(weights, dtype="fp16", layout="NCHW", strides=(1, 1)):
        plan = tcuda.SparseConvPlan(weights, None, strides, (1, 1, 1, 1), (1, 1), 0, 0.0, 6.0, dtype, layout)
        return [n for n in plan.variants(1, 20, 24) if "half2" in n and n.startswith("smem(")]

    assert h2_names(sw)
    assert not h2_names(sw, dtype="fp32")
    assert not h2_names(sw, layout="NHWC")
    assert not h2_names(sw, strides=(1, 2))
    assert h2_names(sw, strides=(2, 1))
    assert not h2_names(random_sparse_weight(rng, 16, 24, 3, 3, 0.2))
    big = random_sparse_weight(rng, 16, 24, 3, 3, 0.9)
    np.asarray(big.values)[0] = 70000.0
    assert not h2_names(big)
    monkeypatch.setenv("TRT_SPARSE_NO_H2", "1")
    assert not h2_names(sw)


@pytest.mark.parametrize("sparsity", [0.5, 0.9])
def test_half2_accuracy_deep_reduction(sparsity):
    """fp16 I/O with half2 arithmetic (reuse kernel): fp16 products and fp16 partial sums over at most 16
    input channels, flushed into fp32. On a deep reduction (C = 512, up to 2304 terms per output) the
    error stays within the fp16 tolerance; the measured errors are printed (pytest -s)."""
    rng = np.random.default_rng(secrets.randbits(32))
    C, K, H, W = 512, 32, 14, 14
    sw = random_sparse_weight(rng, K, C, 3, 3, sparsity)
    x = torch.from_numpy(rng.standard_normal((1, C, H, W)).astype(np.float32)).to("cuda", torch.float16)
    ref = reference.sparse_conv2d(x.float().cpu().numpy().astype(np.float64), sw, None, (1, 1), (1, 1, 1, 1))
    plan = tcuda.SparseConvPlan(sw, None, (1, 1), (1, 1, 1, 1), dtype="fp16")
    y = torch.empty((1, K, H, W), device="cuda", dtype=torch.float16)
    names = plan.variants(1, H, W)
    errs = {}
    for i, name in enumerate(names):
        y.fill_(float("nan"))
        plan.enqueue_variant(i, x, y)
        torch.cuda.synchronize()
        out = y.float().cpu().numpy()
        errs[name] = (_rel_err(out, ref), float(np.max(np.abs(out - ref)) / np.max(np.abs(ref))))
    half2 = {k: v for k, v in errs.items() if "half2" in k}
    assert half2, names
    print("half2 errors (norm rel, max abs / max |ref|):", half2)
    print("fp32-accumulate errors:", {k: v for k, v in errs.items() if "half2" not in k})
    bad = {k: v for k, v in errs.items() if not (v[0] < TOL["fp16"] and v[1] < 4e-3)}
    assert not bad, bad


def _weight_nnz(sw):
    return int(np.asarray(sw.row_offsets)[-1])


def test_plan_memory_is_lazy():
    """A 1x1 plan holds only the generic layout + bias; a 3x3 plan grows when every variant is run
    (layouts built on first use) and shrinks again after tune (losers freed, winner kept)."""
    rng = np.random.default_rng(secrets.randbits(32))
    sw1 = random_sparse_weight(rng, 48, 32, 1, 1, 0.9)
    p1 = tcuda.SparseConvPlan(sw1, None, (1, 1), (0, 0, 0, 0))
    nnz1 = _weight_nnz(sw1)
    assert p1.device_bytes() == 16 * max(nnz1, 1) + 4 * (48 + 1) + 4 * 48, p1.describe()
    assert "device_bytes={}".format(p1.device_bytes()) in p1.describe()

    sw = random_sparse_weight(rng, 64, 64, 3, 3, 0.9)
    plan = tcuda.SparseConvPlan(sw, None, (1, 1), (1, 1, 1, 1))
    b0 = plan.device_bytes()
    nnz = _weight_nnz(sw)
    assert b0 < 48 * nnz + 64 * 1024, (b0, nnz, plan.describe())  # generic + the heuristic's 2 smem layouts
    x = torch.from_numpy(rng.standard_normal((1, 64, 14, 14)).astype(np.float32)).cuda()
    y = torch.empty((1, 64, 14, 14), device="cuda")
    for i in range(len(plan.variants(1, 14, 14))):
        plan.enqueue_variant(i, x, y)
    torch.cuda.synchronize()
    b_all = plan.device_bytes()
    assert b_all > b0 + 3 * 8 * nnz, (b0, b_all)  # tile (3 kt) and other smem layouts were built
    plan.tune(x, y)
    torch.cuda.synchronize()
    b_t = plan.device_bytes()
    assert b0 <= b_t < b_all, (b0, b_t, b_all)
    assert b_t <= b0 + 12 * nnz + 256 * 1024, (b0, b_t)  # at most one extra layout


def _mma_variant_id(cfg):
    """plugin/kernels/sparse_conv.cu encode_variant for a tensor-core (kind 5) config: the config's low 4 bits at
    bit 4, its high bits at bit 17."""
    return 5 | ((cfg & 15) << 4) | ((cfg >> 4) << 17)


def test_choice_of_config_ids_above_15():
    """Tensor-core configs 16+ (ids with bits 17+) round-trip through set_choice / get_choice and run correctly;
    the id of a config past the table is refused."""
    seed = secrets.randbits(32)
    rng = np.random.default_rng(seed)
    sw = random_sparse_weight(rng, 64, 128, 3, 3, 0.9)
    xt = torch.from_numpy(rng.standard_normal((1, 128, 7, 7)).astype(np.float32)).to("cuda", torch.float16)
    ref = reference.sparse_conv2d(xt.float().cpu().numpy().astype(np.float64), sw, None, (1, 1), (1, 1, 1, 1),
                                  (1, 1), 0)
    plan = tcuda.SparseConvPlan(sw, None, (1, 1), (1, 1, 1, 1), (1, 1), 0, 0.0, 6.0, "fp16")
    names = plan.variants(1, 7, 7)
    if "mma(tile=8x8,groups=4,nt=4,split=1,cluster=8)" not in names:
        pytest.skip("needs the tensor-core cluster configs (sm_90): variants are " + ", ".join(names))
    y = torch.empty(plan.output_shape(tuple(xt.shape)), device="cuda", dtype=torch.float16)
    vid = _mma_variant_id(16)  # config 16: groups=4 in clusters of 8
    assert vid >= 1 << 17
    plan.set_choice(1, 7, 7, vid)
    assert plan.get_choice(1, 7, 7) == vid
    y.fill_(float("nan"))
    plan.enqueue(xt, y)
    torch.cuda.synchronize()
    err = _rel_err(y.float().cpu().numpy(), ref)
    assert err < TOL["fp16"], (seed, plan.describe(), err)
    for past in (20, 255):  # ids past the table
        with pytest.raises(tcuda.KernelError, match="TSC_ERR_INVALID_ARGUMENT"):
            plan.set_choice(1, 7, 7, _mma_variant_id(past))
    assert plan.get_choice(1, 7, 7) == vid


@pytest.mark.parametrize("dtype", ["fp32", "fp16"])
def test_choice_roundtrip_and_validation(dtype):
    """get_choice after tune, set_choice on a fresh plan of the same weights reproduces it (and runs
    correctly); unknown or unsupported ids are refused."""
    from kernel_cases import case
    c = case("choice", N=2, C=32, K=48, H=14, W=16, sparsity=0.85, activation=1)
    seed = secrets.randbits(32)
    rng = np.random.default_rng(seed)
    sw = random_sparse_weight(rng, c.K, c.C, 3, 3, c.sparsity)
    bias = rng.standard_normal(c.K).astype(np.float32)
    tdt = torch.float16 if dtype == "fp16" else torch.float32
    xt = torch.from_numpy(rng.standard_normal((c.N, c.C, c.H, c.W)).astype(np.float32)).to("cuda", tdt)
    ref = reference.sparse_conv2d(xt.float().cpu().numpy().astype(np.float64), sw, bias, c.strides, c.pads,
                                  c.dilations, c.activation)
    args = (sw, bias, c.strides, c.pads, c.dilations, c.activation, 0.0, 6.0, dtype)
    a = tcuda.SparseConvPlan(*args)
    y = torch.empty(a.output_shape(tuple(xt.shape)), device="cuda", dtype=tdt)
    default_id = a.get_choice(c.N, c.H, c.W)
    a.tune_scratch(c.N, c.H, c.W)
    tuned_id = a.get_choice(c.N, c.H, c.W)
    assert "tuned[" in a.describe()
    b = tcuda.SparseConvPlan(*args)
    assert b.get_choice(c.N, c.H, c.W) == default_id
    b.set_choice(c.N, c.H, c.W, tuned_id)
    assert b.get_choice(c.N, c.H, c.W) == tuned_id
    for plan in (a, b):
        y.fill_(float("nan"))
        plan.enqueue(xt, y)
        torch.cuda.synchronize()
        err = _rel_err(y.float().cpu().numpy(), ref)
        assert err < TOL[dtype], (seed, tuned_id, plan.describe(), err)
    for bad in (-1, 15, 1 << 20, 3 | (16 << 4)):  # smem configs 0..15 exist
        with pytest.raises(tcuda.KernelError, match="TSC_ERR_INVALID_ARGUMENT"):
            b.set_choice(c.N, c.H, c.W, bad)
    assert b.get_choice(c.N, c.H, c.W) == tuned_id  # a refused id changes nothing
    sw5 = random_sparse_weight(rng, 8, 8, 5, 5, 0.9)
    p5 = tcuda.SparseConvPlan(sw5, None, (1, 1), (2, 2, 2, 2))
    with pytest.raises(tcuda.KernelError, match="TSC_ERR_INVALID_ARGUMENT"):
        p5.set_choice(1, 12, 12, 1)  # a tile variant id: no tile kernel for 5x5


def test_enqueue_in_graph_capture_after_tune():
    """Enqueue allocates nothing: a tuned and an untuned shape both capture into a CUDA graph and replay."""
    rng = np.random.default_rng(secrets.randbits(32))
    sw = random_sparse_weight(rng, 32, 32, 3, 3, 0.9)
    plan = tcuda.SparseConvPlan(sw, None, (1, 1), (1, 1, 1, 1))
    xs = [torch.from_numpy(rng.standard_normal((n, 32, h, h)).astype(np.float32)).cuda() for n, h in ((2, 16), (1, 9))]
    ys = [torch.full(tuple(x.shape[:1]) + (32,) + tuple(x.shape[2:]), float("nan"), device="cuda") for x in xs]
    plan.tune(xs[0], ys[0])
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        with torch.cuda.graph(g, stream=s):
            for x, y in zip(xs, ys):
                plan.enqueue(x, y, stream=int(s.cuda_stream))
    for y in ys:
        y.fill_(float("nan"))
    g.replay()
    torch.cuda.synchronize()
    for x, y in zip(xs, ys):
        ref = reference.sparse_conv2d(x.cpu().numpy().astype(np.float64), sw, None, (1, 1), (1, 1, 1, 1))
        assert _rel_err(y.cpu().numpy(), ref) < 1e-5


@pytest.mark.parametrize("c", [c for c in CASES if c.name in ("basic", "odd_sizes", "stride2", "dilation2", "1x1",
                                                               "k_tail_70", "c_many", "resnet_like_7", "vector16",
                                                               "vector16_k_tail", "batch3", "clip")],
                         ids=lambda c: c.name)
def test_tf32_variants_only_when_allowed(c):
    """fp32 plans list TF32 tensor-core variants only with allow_tf32 (sm_80+), and those match the float64
    reference within TF32 accuracy (every other variant of the same plan still within the fp32 tolerance)."""
    plan, errs = _run_case(c, "fp32")
    assert not any(n.startswith("mma(") for n in errs), errs
    if torch.cuda.get_device_capability()[0] < 8:
        pytest.skip("TF32 tensor cores need sm_80+")
    plan, errs = _run_case(c, "fp32", allow_tf32=True)
    tf32 = [n for n in errs if n.endswith(",tf32)")]
    assert tf32, "no TF32 variant offered: {}".format(sorted(errs))
    assert "fp32(tf32-allowed)" in plan.describe()


def test_mma_configs_that_fill_the_shared_memory_budget_stay_offered():
    """A tensor-core layout whose input buffers fill the 48 KB budget (3x3 stride 2, 8x8 tiles: 17 x 20 halves
    per channel, 36 channels per chunk) is still offered once the 128-byte buffer rounding and the mbarriers are
    counted (the chunk shrinks instead; round 10's first runs dropped these configs), and it stays exact."""
    if torch.cuda.get_device_capability()[0] < 8:
        pytest.skip("tensor-core variants need sm_80+")
    rng = np.random.default_rng(secrets.randbits(32))
    sw = random_sparse_weight(rng, 64, 128, 3, 3, 0.9)
    plan = tcuda.SparseConvPlan(sw, None, (2, 2), (1, 1, 1, 1), (1, 1), dtype="fp16")
    names = plan.variants(1, 28, 28)
    mma8 = [n for n in names if n.startswith("mma(tile=8x8,")]
    assert len(mma8) >= 4, names
    x = rng.standard_normal((1, 128, 28, 28)).astype(np.float32)
    xt = torch.from_numpy(x).to("cuda", torch.float16)
    ref = reference.sparse_conv2d(xt.float().cpu().numpy().astype(np.float64), sw, None, (2, 2), (1, 1, 1, 1), (1, 1))
    y = torch.empty(plan.output_shape(tuple(xt.shape)), device="cuda", dtype=torch.float16)
    for i, n in enumerate(names):
        if not n.startswith("mma(tile=8x8,"):
            continue
        y.fill_(float("nan"))
        plan.enqueue_variant(i, xt, y)
        torch.cuda.synchronize()
        err = _rel_err(y.float().cpu().numpy(), ref)
        assert err < TOL["fp16"], (n, err)
