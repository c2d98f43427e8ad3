"""CPU tests of the benchmark-analysis scripts under bench/ (no GPU: they read ncu text and JSON)."""
import importlib.util
import os

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _load(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, "bench", name + ".py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


split = _load("ncu_loop_split")

NCU_PAGE = """  smem_kernel<...> (256, 1, 1)x(256, 1, 1), Context 1, Stream 7, Device 0, CC 9.0
    Section: GPU Speed Of Light Throughput
    ----------------------- ----------- ------------
    Metric Name             Metric Unit Metric Value
    ----------------------- ----------- ------------
    Duration                         {unit}        {dur}
    Section: Instruction Statistics
    ---------------------------------------- ----------- ------------
    Executed Instructions                           inst   {instr}
    Executed Instructions Per Cycle          inst/cycle         2.07
"""


@pytest.mark.parametrize("unit,dur,expect_us", [("us", "41.41", 41.41), ("ms", "1.25", 1250.0), ("ns", "980", 0.98)])
def test_parse_ncu_details_reads_instructions_and_duration(unit, dur, expect_us):
    instr, us = split.parse_ncu_details(NCU_PAGE.format(unit=unit, dur=dur, instr="22,456,602"))
    assert instr == 22456602
    assert us == pytest.approx(expect_us)


def test_parse_ncu_details_without_instruction_stats_names_the_section():
    with pytest.raises(ValueError, match="InstructionStats"):
        split.parse_ncu_details("    Duration   us   3.2\n")


def test_fit_split_recovers_loop_and_fixed_part():
    loop, fixed = 1.54, 13.6e6  # thread instructions per FMA, warp instructions
    fmas = [92.1e6, 140e6, 183.2e6]
    pts = [(f, fixed + loop * f / 32.0) for f in fmas]
    got_loop, got_fixed = split.fit_split(pts)
    assert got_loop == pytest.approx(loop, rel=1e-9)
    assert got_fixed == pytest.approx(fixed, rel=1e-9)
    with pytest.raises(ValueError, match="two or more"):
        split.fit_split([(5.0, 10.0), (5.0, 11.0)])


def test_useful_fmas_counts_the_seeded_nonzeros_times_output_pixels():
    lay = {"name": "t", "C": 5, "K": 7, "H": 11, "W": 9, "kernel": 3, "stride": 2, "pad": 1}
    rng = np.random.default_rng(0)  # the same draws as _pruned_weight: normal weights, then the mask
    w = rng.standard_normal((7, 5, 3, 3))
    drop = rng.random((7, 5, 3, 3)) < 0.8
    nnz = int(np.count_nonzero(w[~drop]))
    p, q = (11 + 2 - 3) // 2 + 1, (9 + 2 - 3) // 2 + 1
    assert split.useful_fmas(lay, 0.8, 3) == nnz * 3 * p * q


def test_mma_operand_probe_layouts_emulate(tmp_path):
    """bench/probes/mma_operand_probe.cu --emulate runs one block of every operand mode (A-E) on the CPU: each
    layout's fragments must reproduce the float64 reference (the binary exits 1 above 2e-3 relative error) and every
    emulated ldmatrix row address must be 16-byte aligned and inside the staged tile (it exits 1 otherwise)."""
    import shutil
    import subprocess
    nvcc = shutil.which("nvcc")
    if not nvcc:
        pytest.skip("nvcc not found: the probe is CUDA C++ (its --emulate mode runs on the CPU)")
    exe = str(tmp_path / "mma_probe")
    build = subprocess.run([nvcc, "-O1", "-std=c++17", "-arch=sm_90", os.path.join(ROOT, "bench", "probes",
                            "mma_operand_probe.cu"), "-o", exe], capture_output=True, text=True, timeout=600)
    assert build.returncode == 0, build.stderr[-2000:]
    run = subprocess.run([exe, "--emulate"], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    rows = [l for l in run.stdout.splitlines() if "emulated" in l]
    assert len(rows) == 5 and all(" E: " in l for l in rows), run.stdout


def test_mma_needed_rate_counts_union_products():
    """bench/mma_needed_rate.py: the issued mma work of a union of G channels is 2 K C R S P Q N (1 - s^G), and the
    rate a target needs is that work over dense_time / target."""
    rate = _load("mma_needed_rate")
    lay = {"name": "l", "C": 64, "K": 32, "H": 14, "W": 10, "kernel": 3, "stride": 1, "pad": 1, "dilation": 1}
    g16 = rate.issued_gflop(lay, 2, 0.9, 16)
    assert g16 == pytest.approx(2 * 32 * 64 * 9 * 14 * 10 * 2 * (1 - 0.9 ** 16) / 1e9)
    assert rate.issued_gflop(lay, 2, 0.9, 8) < g16
    res = [{"layer": lay, "batch": 2, "sparsity": 0.9, "dtype": "fp16", "pattern": "unstructured",
            "dense_us": {"fp16_best": 3.0}, "sparse_us": 4.0},
           dict(layer=lay, batch=2, sparsity=0.9, dtype="fp32", dense_us={}, sparse_us=1.0)]
    (row,) = rate.needed_rows(res, 1.5, [16, 8])
    assert row[5][16] == pytest.approx(g16 / (3.0 / 1.5) * 1e3)  # GFLOP per us = 1000 TFLOP/s
    assert row[6] == pytest.approx(g16 / 4.0 * 1e3)
    # fp32 I/O against cuDNN with TF32 allowed (the user's default); TF32 sparse rows (allow_tf32) are left out
    res32 = [dict(res[1], dense_us={"tf32_best": 2.0}, sparse_us=5.0), dict(res[1], allow_tf32=True, dense_us={})]
    (row32,) = rate.needed_rows(res32, 2.0, [16], dtype="fp32")
    assert row32[3] == 2.0 and row32[5][16] == pytest.approx(g16 / 1.0 * 1e3)


def test_lib_ab_summary_ratios_family_and_overall(tmp_path):
    """bench/lib_ab_summary.py: A / B geomeans of the family's best and of the overall best, per run pair."""
    import json
    lab = _load("lib_ab_summary")

    def rows(smem_a, smem_b, mma):
        return [{"layer": "l%d" % i, "batch": 1, "dtype": "fp32", "sparsity": 0.9,
                 "times_us": {"smem(x)": s1, "smem(y)": s2, "mma(z)": m},
                 "best_per_family": {"smem": ["smem(x)" if s1 <= s2 else "smem(y)", min(s1, s2)], "mma": ["mma(z)", m]}}
                for i, (s1, s2, m) in enumerate(zip(smem_a, smem_b, mma))]

    paths = []
    # B makes the best smem variant 2x faster on case 0 and unchanged on case 1; mma (the overall best on case 1) same
    for n, data in (("a1", rows([10, 20], [12, 22], [30, 5])), ("b1", rows([5, 20], [12, 22], [30, 5])),
                    ("a2", rows([10, 20], [12, 22], [30, 5])), ("b2", rows([5, 20], [12, 22], [30, 5]))):
        p = tmp_path / (n + ".json")
        p.write_text(json.dumps(data))
        paths.append(str(p))
    out = {(r["a"], r["b"]): r for r in lab.summarize(paths, "smem")}
    assert out[("A1", "B1")]["cases"] == 2
    assert out[("A1", "B1")]["family_ratio"] == pytest.approx(2 ** 0.5)   # geomean of 2 and 1
    assert out[("A1", "B1")]["overall_ratio"] == pytest.approx(2 ** 0.5)  # 10 -> 5 on case 0; 5 -> 5 on case 1
    assert out[("A1", "A2")]["family_ratio"] == pytest.approx(1.0)
    assert out[("A2", "B2")]["family_ratio"] == pytest.approx(2 ** 0.5)
    # two runs: one pair (A1 / B1), here for the mma family (unchanged)
    two = lab.summarize([paths[0], str(tmp_path / "b1.json")], "mma")
    assert two[0]["family_ratio"] == pytest.approx(1.0) and len(two) == 1
