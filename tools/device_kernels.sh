#!/usr/bin/env bash
# One device call for the kernel work: build (sm_90), GPU tests, compute-sanitizer, benchmark.
#   [DEADLINE=S] bash tools/device_kernels.sh [build] [test] [sanitize] [sanitize-quick] [racecheck-quick] [plan-memory] [bench-quick]
#                                             [variants] [bench-full] [bench-sweep] [ncu] [ncu-reuse]
#                                             [mma] [tf32] [bench-vector] [bench-tf32] [ab-tma] [ab-mma] [ab-small]
#                                             [probe] [probe-mma] [variants-reuse] [ab-layout] [ab-order] [ab-align8] [ab-clusters]
#                                             [ab-bigchunk] [ab-pairs] [ab-h2] [ncu-h2] [ab-blocks4] [burst] [pdl] [ab-pdl]
# TRT_SPARSE_KERNELS_LIB selects an already built library (e.g. from tests/cpp/run_device.sh) instead of build/.
# DEADLINE: skip stages that would not finish S seconds after the start (keep it below the call's timeout).
# Stages run in this file's order (build, test, sanitizers, ..., bench-full, the A/B stages, ...), not in the order
# given: with a tight DEADLINE the later ones are the ones skipped.
# TRT_SPARSE_COMMIT=<hash> names the commit in the JSON results: pass the checkout's hash literally (the device's
# copy of the working tree may carry an older git HEAD than the files it runs).
# Logs and JSON go to $OUT (default ./device_out); a short table is printed last.
set -u
OUT=${OUT:-$PWD/device_out}
mkdir -p "$OUT"
STAGES=${*:-build test sanitize bench-quick}
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
T0=$(date +%s)
say() { echo "[$(( $(date +%s) - T0 ))s] $*"; }
has() { case " $STAGES " in *" $1 "*) return 0;; esac; return 1; }
# DEADLINE=S: skip a stage that would likely not finish S seconds after the start (estimate in $2)
fits() { local left=$(( ${DEADLINE:-100000} - ($(date +%s) - T0) )); [ "$left" -ge "$1" ] || { say "skip: $left s left < $1 s"; return 1; }; }
status=0
# tuned_variant LAYER [profile_layer args]: index of the variant the tuner picks, tuned in its own process (so that
# ncu profiles only the chosen variant's launches)
tuned_variant() { python3 bench/profile_layer.py "$@" --runs 1 | awk '/^variant/{print $2}'; }

if has build; then
  say "build"
  (cmake -S plugin -B build -DTSC_CUDA_ARCHS=90 -DCMAKE_BUILD_TYPE=Release >"$OUT/build.log" 2>&1 &&
   cmake --build build -j16 >>"$OUT/build.log" 2>&1) || { say "BUILD FAILED"; tail -30 "$OUT/build.log"; exit 1; }
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv >>"$OUT/build.log" 2>&1
  # tensor-core kernels: 16-bit gather loads per function, and how many use an immediate offset
  cuobjdump -sass build/kernels/libtrt_sparse_kernels.so 2>/dev/null | awk '/Function :/{f=$3} /LDS.U16|LDS /{n[f]++; if ($0 ~ /\+0x/) m[f]++} END{for (k in n) print k, n[k], m[k]+0}' \
    | grep mma_kernel | sort > "$OUT/mma_lds.txt" 2>/dev/null
  cuobjdump -sass build/kernels/libtrt_sparse_kernels.so 2>/dev/null | grep -E "Function|BRX|FFMA|LDG" \
    | awk '/Function/{f=$0} /BRX/{b[f]++} /FFMA/{m[f]++} /LDG/{l[f]++} END{for(k in m) print k, "FFMA",m[k],"BRX",b[k],"LDG",l[k]}' \
    > "$OUT/sass_counts.txt" 2>/dev/null
fi
if has test; then
  say "gpu tests"
  python3 -m pytest -q -m gpu tests/test_kernels_gpu.py tests/test_kernels.py -rs >"$OUT/pytest_gpu.log" 2>&1 || status=1
  tail -5 "$OUT/pytest_gpu.log"; grep -E "^FAILED|rel err" "$OUT/pytest_gpu.log" | cut -c1-600 | head -20
fi
if has sanitize && fits 60; then
  say "compute-sanitizer memcheck + racecheck (subset)"
  SUB="basic or odd_sizes or stride2 or 1x1 or k_tail_70 or batch3 or skewed or dilation2 or c_many or vector or sp0 or sp50"
  for tool in memcheck racecheck; do
    # racecheck runs ~20x slower: there the TMA comparison keeps three shapes (multi-chunk tail, cluster, 1x1)
    TMA_K="test_tma_staging"
    [ $tool = racecheck ] && TMA_K="(test_tma_staging and (s1_w56_tail or c512_w8_cluster or 1x1_w32))"
    compute-sanitizer --tool $tool --error-exitcode 99 python3 -m pytest -q -m gpu tests/test_kernels_gpu.py \
      -k "(test_every_variant_matches_reference and ($SUB)) or $TMA_K" >"$OUT/sanitize_$tool.log" 2>&1
    rc=$?; say "$tool rc=$rc"; grep -E "ERROR SUMMARY|passed|failed" "$OUT/sanitize_$tool.log" | tail -3
    [ $rc -eq 0 ] || status=1
  done
fi
if has sanitize-quick && fits 40; then
  say "compute-sanitizer memcheck (small subset + plan memory / choice tests)"
  compute-sanitizer --tool memcheck --error-exitcode 99 python3 -m pytest -q -m gpu tests/test_kernels_gpu.py \
    -k "(test_every_variant_matches_reference and (basic or 1x1)) or (test_nhwc_matches_reference and (basic or stride2 or odd_sizes)) or (test_pair_staging_matches_elementwise and (w14_pad1 or w30_pad3_asym or w26_s2)) or test_plan_memory_is_lazy or test_choice_roundtrip or (test_half2_smem_variants_match_reference and (w17_odd or w20_offset1 or w36_pad0 or w7_c512_cluster or c1))" \
    >"$OUT/sanitize_quick.log" 2>&1
  rc=$?; say "memcheck rc=$rc"; grep -E "ERROR SUMMARY|passed|failed" "$OUT/sanitize_quick.log" | tail -3
  [ $rc -eq 0 ] || status=1
fi
if has racecheck-quick && fits 60; then
  say "compute-sanitizer racecheck (small subset: every variant of three cases, incl. cluster configs)"
  compute-sanitizer --tool racecheck --error-exitcode 99 python3 -m pytest -q -m gpu tests/test_kernels_gpu.py \
    -k "(test_every_variant_matches_reference and (basic or c_many or resnet_like_7 or sp99)) or (test_half2_smem_variants_match_reference and (w20_pad1 or w17_odd or w7_c512_cluster))" >"$OUT/racecheck_quick.log" 2>&1
  rc=$?; say "racecheck rc=$rc"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|passed|failed" "$OUT/racecheck_quick.log" | tail -3
  [ $rc -eq 0 ] || status=1
fi
if has plan-memory && fits 40; then
  say "plan device memory: ResNet-50 convs at 90% sparsity, fp32, batch 1 (224x224)"
  python3 - <<'PY' 2>&1 | tee "$OUT/plan_memory.txt"
import sys, time
import numpy as np, torch
sys.path.insert(0, "tests")
from kernel_cases import random_sparse_weight
from trt_sparse import cuda as tcuda
# (name, C, K, R, stride, input H) of every conv of ResNet-50 v1.5 (torchvision), 224x224 input
layers = [("conv1", 3, 64, 7, 2, 224)]
cin, hw = 64, 56
for si, (planes, blocks) in enumerate(((64, 3), (128, 4), (256, 6), (512, 3))):
    for b in range(blocks):
        st = 2 if (b == 0 and si > 0) else 1
        layers.append(("s%d.b%d.1x1a" % (si, b), cin, planes, 1, 1, hw))
        layers.append(("s%d.b%d.3x3" % (si, b), planes, planes, 3, st, hw))
        hw2 = hw // st
        layers.append(("s%d.b%d.1x1b" % (si, b), planes, planes * 4, 1, 1, hw2))
        if b == 0:
            layers.append(("s%d.b%d.down" % (si, b), cin, planes * 4, 1, st, hw))
        cin, hw = planes * 4, hw2
rng = np.random.default_rng(0)
tot = dict(dense=0, nnz=0, create=0, tuned=0, all=0)
t0 = time.time()
print("%-14s %5s %5s %2s %2s %8s %10s %10s %10s  (device bytes per plan)" % ("layer", "C", "K", "R", "s", "nnz", "create", "tuned", "all"))
for name, C, K, R, st, H in layers:
    sw = random_sparse_weight(rng, K, C, R, R, 0.9)
    nnz = int(np.asarray(sw.row_offsets)[-1])
    pad = R // 2
    plan = tcuda.SparseConvPlan(sw, None, (st, st), (pad, pad, pad, pad))
    b_create = plan.device_bytes()
    plan.tune_scratch(1, H, H)
    b_tuned = plan.device_bytes()
    x = torch.zeros((1, C, H, H), device="cuda")
    y = torch.empty(plan.output_shape((1, C, H, H)), device="cuda")
    for i in range(len(plan.variants(1, H, H))):
        plan.enqueue_variant(i, x, y)
    torch.cuda.synchronize()
    b_all = plan.device_bytes()
    print("%-14s %5d %5d %2d %2d %8d %10d %10d %10d" % (name, C, K, R, st, nnz, b_create, b_tuned, b_all))
    for k, v in (("dense", K * C * R * R * 4), ("nnz", nnz), ("create", b_create), ("tuned", b_tuned), ("all", b_all)):
        tot[k] += v
    plan.close()
print("TOTAL %d convs: dense fp32 weights %.1f MB, nnz %d; plan device memory: create %.1f MB (%.1f B/nnz), "
      "after tune %.1f MB (%.1f B/nnz), every layout built (= eager create before this change) %.1f MB (%.1f B/nnz); %.0f s"
      % (len(layers), tot["dense"] / 1e6, tot["nnz"], tot["create"] / 1e6, tot["create"] / tot["nnz"],
         tot["tuned"] / 1e6, tot["tuned"] / tot["nnz"], tot["all"] / 1e6, tot["all"] / tot["nnz"], time.time() - t0))
PY
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
fi
if has bench-quick && fits 40; then
  say "bench quick (3x3 s1, batch 1)"
  python3 -m trt_sparse bench-kernels --layers bench/layers.json --batch 1 --sparsity 0.9 0.95 \
    --dtype fp32 fp16 --only resnet50_3x3_c64_h56 resnet50_3x3_c128_h28 resnet50_3x3_c256_h14 resnet50_3x3_c512_h7 \
    vgg16_3x3_c64_k128_h112 vgg16_3x3_c256_k512_h28 --json "$OUT/bench_quick.json" 2>"$OUT/bench_quick.err" || status=1
fi
if has burst && fits 120; then
  say "burst kernel: tests + memcheck + racecheck (subset), staged-TMA A/B, burst vs the older variants (round 23)"
  python3 -m pytest -q -m gpu tests/test_kernels_gpu.py -k "burst or test_tma_staging" -rs >"$OUT/pytest_burst.log" 2>&1 || status=1
  tail -1 "$OUT/pytest_burst.log"
  compute-sanitizer --tool memcheck --error-exitcode 99 python3 -m pytest -q -m gpu tests/test_kernels_gpu.py -k burst \
    >"$OUT/memcheck_burst.log" 2>&1 || status=1
  grep -E "ERROR SUMMARY" "$OUT/memcheck_burst.log" | tail -1
  compute-sanitizer --tool racecheck --error-exitcode 99 python3 -m pytest -q -m gpu tests/test_kernels_gpu.py \
    -k "test_burst_row_slabs_match_tma and (w16_pad1 or w32_c300) and fp32 and stages_default" >"$OUT/racecheck_burst.log" 2>&1 || status=1
  grep -E "RACECHECK SUMMARY" "$OUT/racecheck_burst.log" | tail -1
  timeout 100 python3 bench/env_ab.py --env TRT_SPARSE_BURST_STAGES=1 --family burst --top 4 --batch 1 --sparsity 0.9 0.95 \
    --dtype fp32 fp16 --only resnet50_3x3_c64_h56 resnet50_3x3_c128_h28 --json "$OUT/ab_burst_stages1.json" >"$OUT/ab_burst_stages1.log" 2>&1 || status=1
  tail -1 "$OUT/ab_burst_stages1.log"
  timeout 120 python3 bench/variant_times.py --family burst --sparsity 0.9 0.95 --dtype fp32 fp16 --only resnet50_3x3_c64_h56 \
    resnet50_3x3_c128_h28 resnet50_3x3_c256_h14 resnet50_3x3_c512_h7 vgg16_3x3_c512_k512_h14 --json "$OUT/vt_burst.json" \
    >"$OUT/vt_burst.log" 2>&1 || status=1
  tail -20 "$OUT/vt_burst.log"
fi
S1_LAYERS() { python3 -c "import json;print(' '.join(l['name'] for l in json.load(open('bench/layers.json'))['layers'] if l['kernel']==3 and l['stride']==1))"; }
if has pdl && fits 120; then
  say "programmatic dependent launch (round 24): chain tests + memcheck, bench b1 3x3 s1 plain vs TRT_SPARSE_PDL=1"
  python3 -m pytest -q -m gpu tests/test_kernels_gpu.py -k pdl -rs >"$OUT/pytest_pdl.log" 2>&1 || status=1
  tail -1 "$OUT/pytest_pdl.log"; grep -E "^FAILED" "$OUT/pytest_pdl.log" | cut -c1-400 | head -5
  compute-sanitizer --tool memcheck --error-exitcode 99 python3 -m pytest -q -m gpu tests/test_kernels_gpu.py -k "pdl and c32_w16" \
    >"$OUT/memcheck_pdl.log" 2>&1 || status=1
  grep -E "ERROR SUMMARY" "$OUT/memcheck_pdl.log" | tail -1
  for mode in plain pdl; do
    fits 100 || break
    if [ $mode = pdl ]; then export TRT_SPARSE_PDL=1; else unset TRT_SPARSE_PDL; fi
    timeout 170 python3 -m trt_sparse bench-kernels --layers bench/layers.json --batch ${PDL_BATCH:-1} --sparsity 0.9 0.95 \
      --dtype fp32 fp16 --only $(S1_LAYERS) --json "$OUT/bench_b1_3x3s1_$mode.json" --plot "$OUT/bench_b1_3x3s1_$mode.png" \
      >"$OUT/bench_$mode.log" 2>&1 || status=1
    tail -6 "$OUT/bench_$mode.log"
  done
  unset TRT_SPARSE_PDL
  python3 - "$OUT/bench_b1_3x3s1_plain.json" "$OUT/bench_b1_3x3s1_pdl.json" <<'PY' 2>&1 | tee "$OUT/pdl_compare.txt"
import json, math, sys
a, b = (json.load(open(f))["results"] for f in sys.argv[1:3])
key = lambda r: (r["layer"]["name"], r["dtype"], r["sparsity"], r["batch"])
bm = {key(r): r for r in b}
logs = []
for r in a:
    q = bm.get(key(r))
    if not q: continue
    ratio = r["sparse_us"] / q["sparse_us"]
    logs.append(math.log(ratio))
    print("%-28s %s %.2f plain %7.2f us (%s)  pdl %7.2f us (%s)  plain/pdl %.3f" % (key(r)[0], r["dtype"], r["sparsity"],
          r["sparse_us"], r["sparse_variant"], q["sparse_us"], q["sparse_variant"], ratio))
print("geomean plain/pdl sparse time: %.3f over %d cases" % (math.exp(sum(logs) / len(logs)), len(logs)))
PY
fi
if has variants && fits 150; then
  say "every variant timed (fp32 batch 1, 3x3 s1 + s2 + 1x1 samples)"
  timeout 150 python3 bench/variant_times.py --sparsity 0.9 0.95 --dtype fp32 fp16 --only resnet50_3x3_c64_h56 \
    resnet50_3x3_c128_h28 resnet50_3x3_c256_h14 resnet50_3x3_c512_h7 vgg16_3x3_c64_k128_h112 vgg16_3x3_c256_k512_h28 \
    resnet50_3x3s2_c256_h28 resnet50_1x1_c256_k64_h56 --json "$OUT/variant_times.json" 2>&1 | tee "$OUT/variant_times.txt" | tail -40
fi
if has bench-full && fits 110; then
  say "bench full sweep"
  python3 -m trt_sparse bench-kernels --layers bench/layers.json --batch 1 8 --sparsity 0.9 0.95 \
    --dtype fp32 fp16 --json "$OUT/bench_full.json" --plot "$OUT/bench_full.png" 2>"$OUT/bench_full.err" || status=1
fi
if has ab-pdl && fits 120; then
  say "A/B in one process: plain launches (A) vs programmatic dependent launch (B: TRT_SPARSE_PDL=1), same variants"
  timeout ${AB_PDL_TIMEOUT:-280} python3 bench/env_ab.py --env TRT_SPARSE_PDL=1 --family smem mma burst --batch 1 \
    --sparsity ${AB_PDL_SPARSITY:-0.9} --dtype fp32 fp16 --only $(S1_LAYERS) --json "$OUT/ab_pdl.json" >"$OUT/ab_pdl.log" 2>&1 || status=1
  tail -40 "$OUT/ab_pdl.log"
fi
if has ab-tma && fits 90; then
  say "A/B in one process: smem variants staged by TMA (A) vs cp.async (B: TRT_SPARSE_NO_TMA=1)"
  timeout 300 python3 bench/env_ab.py --env TRT_SPARSE_NO_TMA=1 --batch 1 8 --sparsity 0.9 --dtype fp32 \
    --only $(S1_LAYERS) \
    --json "$OUT/ab_tma.json" >"$OUT/ab_tma.log" 2>&1 || status=1
  tail -3 "$OUT/ab_tma.log"
fi
# mma_ab NAME ENV=VALUE TEXT [SPARSITIES]: same-process A/B of the fp16 mma variants, plan B created with ENV=VALUE
# (bench/env_ab.py; default 90%, batch 1 / 8, the 3x3 stride-1 layers), results in $OUT/ab_NAME.json
# (a fifth argument adds env_ab.py options, e.g. "--pattern vector:16 --batch 1" or "--family smem --dtype fp32")
mma_ab() {
  say "A/B in one process: $3"
  timeout 300 python3 bench/env_ab.py --env "$2" --family mma --batch 1 8 --sparsity ${4:-0.9} --dtype fp16 \
    --only $(S1_LAYERS) ${5:-} --json "$OUT/ab_$1.json" >"$OUT/ab_$1.log" 2>&1 || status=1
  tail -3 "$OUT/ab_$1.log"
}
if has ab-mma && fits 90; then
  mma_ab mma TRT_SPARSE_NO_TMA=1 "fp16 mma variants staged by TMA (A) vs cp.async (B: TRT_SPARSE_NO_TMA=1)"
fi
if has ab-order && fits 90; then
  mma_ab order TRT_SPARSE_MMA_SORTED=1 "fp16 mma k-steps in bank-aware order (A) vs sorted order (B: TRT_SPARSE_MMA_SORTED=1)"
fi
if has ab-clusters && fits 120; then
  mma_ab clusters TRT_SPARSE_MMA_CFG_LIMIT=12 \
    "fp16 mma with the round-14 cluster configs (A) vs the round-13 configs only (B: TRT_SPARSE_MMA_CFG_LIMIT=12)" "0.9 0.95"
fi
if has ab-blocks4 && fits 200; then
  say "A/B across processes: smem KW <= 2 configs compiled for 3 blocks per SM (A, build/) vs 4 (B, -DTSC_SMEM_BLOCKS_KW2=4)"
  (cmake -S plugin -B build_b4 -DTSC_CUDA_ARCHS=90 -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_FLAGS=-DTSC_SMEM_BLOCKS_KW2=4 \
     >"$OUT/build_b4.log" 2>&1 && cmake --build build_b4 -j16 >>"$OUT/build_b4.log" 2>&1) || { say "B4 BUILD FAILED"; status=1; }
  LB4=$(ls build_b4/kernels/libtrt_sparse_kernels.so 2>/dev/null)
  if [ -n "$LB4" ]; then
    TRT_SPARSE_KERNELS_LIB=$PWD/$LB4 python3 -m pytest -q -m gpu tests/test_kernels_gpu.py \
      -k "test_every_variant_matches_reference or test_nhwc_matches_reference or test_half2_smem" >"$OUT/pytest_b4.log" 2>&1 || status=1
    say "tests with the 4-block library: $(tail -1 "$OUT/pytest_b4.log")"
    B4L=${B4_LAYERS:-resnet50_3x3_c64_h56 resnet50_3x3_c128_h28 resnet50_3x3_c256_h14 vgg16_3x3_c64_k128_h112 vgg16_3x3_c256_k256_h56 vgg16_3x3_c512_k512_h28}
    # A, B, A, B in separate processes (the library is chosen at import): a1 / a2 measures the process-to-process noise
    for run in a1 b1 a2 b2; do
      fits 40 || break
      lib=""; [ "${run#b}" != "$run" ] && lib=$PWD/$LB4
      TRT_SPARSE_KERNELS_LIB=$lib timeout 150 python3 bench/variant_times.py --family smem --sparsity 0.9 0.95 --dtype fp32 \
        --batch 1 8 --only $B4L --json "$OUT/vt_$run.json" >"$OUT/vt_$run.log" 2>&1 || status=1
      say "run $run done"
    done
    python3 bench/lib_ab_summary.py "$OUT"/vt_a1.json "$OUT"/vt_b1.json "$OUT"/vt_a2.json "$OUT"/vt_b2.json --family smem \
      --json "$OUT/ab_blocks4.json" || status=1
  fi
fi
if has ab-bigchunk && fits 100; then
  mma_ab bigchunk TRT_SPARSE_MMA_CFG_LIMIT=17 \
    "fp16 mma with the 96 KB-staging configs (A) vs without (B: TRT_SPARSE_MMA_CFG_LIMIT=17)" "0.9 0.95"
  mma_ab bigchunk_vector16 TRT_SPARSE_MMA_CFG_LIMIT=17 "the same, vector:16 95% batch 1" 0.95 "--pattern vector:16 --batch 1"
fi
if has ab-pairs && fits 120; then
  say "A/B in one process: pair staging (A) vs element-wise (B: TRT_SPARSE_NO_PAIR_STAGE=1), the W = 14 layers"
  W14="resnet50_3x3_c256_h14 resnet50_3x3s2_c512_h14 resnet50_1x1_c1024_k256_h14 resnet50_1x1_c256_k1024_h14 vgg16_3x3_c512_k512_h14"
  for fam in smem mma; do
    dts="fp32 fp16"; [ $fam = mma ] && dts=fp16
    timeout 200 python3 bench/env_ab.py --env TRT_SPARSE_NO_PAIR_STAGE=1 --family $fam --batch 1 8 --sparsity 0.9 0.95 \
      --dtype $dts --only $W14 --json "$OUT/ab_pairs_$fam.json" >"$OUT/ab_pairs_$fam.log" 2>&1 || status=1
    tail -3 "$OUT/ab_pairs_$fam.log"
  done
fi
if has ab-h2 && fits 90; then
  say "A/B in one process: smem family with the half2 layouts (A) vs without (B: TRT_SPARSE_NO_H2=1), fp16 3x3 s1"
  timeout 240 python3 bench/env_ab.py --env TRT_SPARSE_NO_H2=1 --family smem --batch 1 8 --sparsity 0.9 0.95 \
    --dtype fp16 --only $(S1_LAYERS) --json "$OUT/ab_h2.json" >"$OUT/ab_h2.log" 2>&1 || status=1
  tail -3 "$OUT/ab_h2.log"
fi
if has ab-align8 && fits 90; then
  mma_ab align8 TRT_SPARSE_MMA_ALIGN8=1 \
    "fp16 8-wide mma tiles in 4-element units (A) vs 8-element units, TMA-able (B: TRT_SPARSE_MMA_ALIGN8=1)"
fi
if has ab-small && fits 60; then
  say "A/B in one process: TMA vs cp.async on the small-map fp32 layers that were slower in round 9 than round 8"
  timeout 180 python3 bench/env_ab.py --env TRT_SPARSE_NO_TMA=1 --family smem --batch 1 --sparsity 0.9 0.95 --dtype fp32 \
    --only resnet50_3x3s2_c256_h28 resnet50_3x3_c128_h28 resnet50_1x1_c512_k128_h28 resnet50_3x3s2_c128_h56 \
    resnet50_3x3_c64_h56 resnet50_3x3s2_c512_h14 vgg16_3x3_c512_k512_h14 --json "$OUT/ab_small.json" >"$OUT/ab_small.log" 2>&1 || status=1
  tail -3 "$OUT/ab_small.log"
fi
if has probe-mma && fits 80; then
  say "tensor-core operand probe: A=weights (union of 16 channels, gathered B) vs B=weights (union of 8, ldmatrix A) vs C=column families (ldmatrix B from one staged copy) vs D=phase rows (ldmatrix B, union of 16) vs E=swap on phase rows (ldmatrix A, union of 8)"
  nvcc -O3 -std=c++17 -arch=sm_90 bench/probes/mma_operand_probe.cu -o "$OUT/mma_probe" 2>"$OUT/mma_probe_build.log" &&
    timeout 60 "$OUT/mma_probe" --json "$OUT/mma_probe.json" | tee "$OUT/mma_probe.txt" || status=1
  rm -f "$OUT/mma_probe"
  # the ceiling: mma.sync issue rate from registers (chains x warps per SM)
  nvcc -O3 -std=c++17 -arch=sm_90 bench/probes/mma_peak_probe.cu -o "$OUT/mma_peak" 2>>"$OUT/mma_probe_build.log" &&
    timeout 60 "$OUT/mma_peak" --json "$OUT/mma_peak.json" | tee "$OUT/mma_peak.txt" || status=1
  rm -f "$OUT/mma_peak"
fi
if has probe && fits 60; then
  say "reuse dispatch probe (brx.idx vs bit masks vs per-FMA LDS, no staging; bench/probes)"
  nvcc -O3 -std=c++17 -arch=sm_90 -I plugin/kernels bench/probes/reuse_dispatch_probe.cu -o "$OUT/probe" 2>"$OUT/probe_build.log" &&
    timeout 120 "$OUT/probe" --json "$OUT/probe.json" | tee "$OUT/probe.txt" | tail -20 || status=1
  rm -f "$OUT/probe"
fi
if has variants-reuse && fits 120; then
  say "every variant timed, reuse family vs the best other (fp32 + fp16, large 3x3 s1 maps)"
  timeout 240 python3 bench/variant_times.py --sparsity 0.9 0.95 --dtype fp32 fp16 --family reuse \
    --only vgg16_3x3_c256_k256_h56 vgg16_3x3_c128_k128_h112 vgg16_3x3_c64_k64_h224 vgg16_3x3_c512_k512_h28 \
    resnet50_3x3_c64_h56 --json "$OUT/variants_reuse.json" >"$OUT/variants_reuse.txt" 2>&1 || status=1
  tail -45 "$OUT/variants_reuse.txt"
fi
if has bench-tf32 && fits 60; then
  say "bench fp32 I/O with TF32 allowed (own regime: sparse TF32 mma vs dense TF32), 3x3 s1 layers"
  python3 -m trt_sparse bench-kernels --layers bench/layers.json --batch 1 8 --sparsity 0.9 0.95 \
    --dtype fp32 --allow-tf32 --only $(S1_LAYERS) \
    --json "$OUT/bench_tf32.json" --plot "$OUT/bench_tf32.png" 2>"$OUT/bench_tf32.err" || status=1
fi
if has bench-sweep && fits 50; then
  say "bench sparsity sweep (batch 1, 3x3 s1 + 1x1 + s2 samples)"
  python3 -m trt_sparse bench-kernels --layers bench/layers.json --batch 1 --sparsity 0.5 0.7 0.8 0.98 0.995 \
    --dtype fp32 fp16 --only resnet50_3x3_c64_h56 resnet50_3x3_c128_h28 resnet50_3x3_c256_h14 resnet50_3x3_c512_h7 \
    vgg16_3x3_c64_k128_h112 vgg16_3x3_c256_k512_h28 resnet50_3x3s2_c256_h28 resnet50_1x1_c256_k64_h56 \
    resnet50_1x1_c1024_k256_h14 --json "$OUT/bench_sweep.json" --plot "$OUT/bench_sweep.png" \
    2>"$OUT/bench_sweep.err" || status=1
fi
if has mma && fits 120; then
  say "tensor-core variant vs the other variants (fp16, unstructured and vector:16)"
  L="resnet50_3x3_c64_h56 resnet50_3x3_c128_h28 resnet50_3x3_c256_h14 resnet50_3x3_c512_h7 vgg16_3x3_c64_k128_h112 vgg16_3x3_c256_k512_h28"
  # --compare: old / new per variant family against the committed round-4 run (same seeded weights)
  timeout 150 python3 bench/variant_times.py --family mma --sparsity 0.9 0.95 --dtype fp16 --only $L \
    --compare bench/results/h200_mma_variant_times_unstructured.json \
    --json "$OUT/mma_unstructured.json" 2>&1 | tee "$OUT/mma_unstructured.txt" | grep -v Warn | tail -24
  timeout 100 python3 bench/variant_times.py --family mma --pattern vector:16 --sparsity 0.7 0.9 --dtype fp16 --only $L \
    --compare bench/results/h200_mma_variant_times_vector16.json \
    --json "$OUT/mma_vector16.json" 2>&1 | tee "$OUT/mma_vector16.txt" | grep -v Warn | tail -24
fi
if has tf32 && fits 90; then
  say "TF32 tensor-core variant for fp32 I/O (opt-in) vs the exact fp32 variants"
  L="resnet50_3x3_c64_h56 resnet50_3x3_c128_h28 resnet50_3x3_c256_h14 resnet50_3x3_c512_h7 vgg16_3x3_c64_k128_h112 vgg16_3x3_c256_k512_h28"
  timeout 150 python3 bench/variant_times.py --family mma --allow-tf32 --sparsity 0.9 0.95 --dtype fp32 --only $L \
    --json "$OUT/mma_tf32.json" 2>&1 | tee "$OUT/mma_tf32.txt" | grep -v Warn | tail -14
fi
if has bench-vector && fits 60; then
  say "bench vector:16 regime (fp16, 3x3 s1 layers, batch 1 and 8)"
  python3 -m trt_sparse bench-kernels --layers bench/layers.json --batch 1 8 --sparsity 0.7 0.9 0.95 \
    --dtype fp16 --pattern vector:16 --json "$OUT/bench_vector16.json" --plot "$OUT/bench_vector16.png" \
    --only resnet50_3x3_c64_h56 resnet50_3x3_c128_h28 resnet50_3x3_c256_h14 resnet50_3x3_c512_h7 \
    vgg16_3x3_c64_k64_h224 vgg16_3x3_c64_k128_h112 vgg16_3x3_c128_k128_h112 vgg16_3x3_c128_k256_h56 \
    vgg16_3x3_c256_k256_h56 vgg16_3x3_c256_k512_h28 vgg16_3x3_c512_k512_h28 vgg16_3x3_c512_k512_h14 \
    2>"$OUT/bench_vector16.err" || status=1
fi
if has ab-layout && fits 90; then
  say "NCHW vs NHWC plans (tuned), 3x3 s1 + stride-2 + 1x1 layers, batch 1, 90%"
  python3 bench/layout_ab.py --sparsity 0.9 --dtype fp32 fp16 --batch 1 --json "$OUT/ab_layout.json" \
    --only resnet50_3x3_c64_h56 resnet50_3x3_c128_h28 resnet50_3x3_c256_h14 resnet50_3x3_c512_h7 \
    vgg16_3x3_c128_k128_h112 vgg16_3x3_c256_k256_h56 vgg16_3x3_c512_k512_h28 resnet50_3x3s2_c128_h56 \
    resnet50_1x1_c256_k64_h56 2>"$OUT/ab_layout.err" | tail -22 || status=1
fi
if has ncu; then
  say "ncu (tuned variant, fp32 90%)"
  for L in resnet50_3x3_c64_h56 resnet50_3x3_c256_h14 vgg16_3x3_c256_k512_h28; do
    idx=$(tuned_variant $L)
    ncu --clock-control none --section SpeedOfLight --section WarpStateStats --section Occupancy \
      --section LaunchStats --section SchedulerStats --section MemoryWorkloadAnalysis -k regex:kernel \
      --launch-skip 2 --launch-count 1 python3 bench/profile_layer.py $L --variant $idx --runs 4 \
      >"$OUT/ncu_$L.txt" 2>&1
    grep -E "^variant|Duration|Registers Per|Achieved Occupancy|Compute \(SM\) Throughput|Memory Throughput|Issued Warp|No Eligible|Warp Cycles Per Issued|L1/TEX Hit|L2 Hit" "$OUT/ncu_$L.txt" | head -14
  done
fi
if has ncu-src; then
  say "ncu with per-instruction stall sampling (tuned variant)"
  # NCU_SPECS: space-separated layer|dtype|pattern (default: the round-6 pair); NCU_SPARSITY (default 0.9)
  for spec in ${NCU_SPECS:-resnet50_3x3_c64_h56|fp16|vector:16 resnet50_3x3_c64_h56|fp32|unstructured}; do
    IFS='|' read -r L DT PAT <<<"$spec"; tag="${L}_${DT}_${PAT%%:*}"
    idx=$(tuned_variant $L --dtype $DT --pattern $PAT --sparsity ${NCU_SPARSITY:-0.9})
    ncu --clock-control none --set full --import-source no -k regex:kernel --launch-skip 3 --launch-count 1 \
      -f -o "$OUT/src_$tag" python3 bench/profile_layer.py $L --dtype $DT --pattern $PAT \
      --sparsity ${NCU_SPARSITY:-0.9} --variant $idx --runs 5 >/dev/null 2>&1
    ncu -i "$OUT/src_$tag.ncu-rep" --page details > "$OUT/ncu_src_$tag.txt" 2>&1
    ncu -i "$OUT/src_$tag.ncu-rep" --page source --csv --print-source sass > "$OUT/sass_$tag.csv" 2>&1
    echo "== $tag"; grep -E "Duration|Elapsed Cycles|Registers Per|Achieved Occupancy|Issued Warp|No Eligible|Warp Cycles Per Issued|Waves Per SM" "$OUT/ncu_src_$tag.txt" | head -10
    rm -f "$OUT/src_$tag.ncu-rep"
  done
fi
if has ncu-reuse; then
  say "ncu (register-reuse variants, fp32 90%)"
  for spec in "resnet50_3x3_c512_h7|reuse(tile=8x8,kt=4,px=1x2,split=8)" "vgg16_3x3_c64_k128_h112|reuse(tile=8x32,kt=4,px=2x4,split=1)" \
              "vgg16_3x3_c64_k128_h112|smem(tile=16x16,kw=2,split=1)"; do
    L=${spec%%|*}; V=${spec#*|}; tag=$(echo "$V" | tr -c 'a-z0-9' '_' | cut -c1-24)
    ncu --clock-control none --section SpeedOfLight --section WarpStateStats --section Occupancy \
      --section LaunchStats --section SchedulerStats --section InstructionStats -k regex:kernel \
      --launch-skip 2 --launch-count 1 python3 bench/profile_layer.py "$L" --variant "$V" --runs 4 \
      >"$OUT/ncu_${L}_$tag.txt" 2>&1
    echo "== $L $V"
    grep -E "Duration|Registers Per|Achieved Occupancy|Compute \(SM\) Throughput|Memory Throughput|Issued Warp|No Eligible|Warp Cycles Per Issued|Executed Ipc A|Stall" "$OUT/ncu_${L}_$tag.txt" | head -16
  done
fi
if has ncu-h2; then
  say "ncu (fp16 smem kernel with / without the half2 layouts, and the tuned tensor-core kernel; vgg16_3x3_c128_k128_h112 batch 1)"
  L=vgg16_3x3_c128_k128_h112
  for spec in "0.9|smem(tile=16x16,kw=2,split=1,half2)" "0.9|smem(tile=16x16,kw=2,split=1)" "0.9|best" \
              "0.95|smem(tile=16x16,kw=2,split=1,half2)" "0.95|smem(tile=16x16,kw=2,split=1)"; do
    SP=${spec%%|*}; V=${spec#*|}; tag=$(echo "${SP}_$V" | tr -c 'a-z0-9' '_' | cut -c1-40)
    [ "$V" = best ] && V=$(tuned_variant $L --dtype fp16 --sparsity "$SP")
    ncu --clock-control none --section SpeedOfLight --section WarpStateStats --section Occupancy \
      --section LaunchStats --section SchedulerStats --section InstructionStats --section ComputeWorkloadAnalysis \
      --section MemoryWorkloadAnalysis -k regex:kernel --launch-skip 2 --launch-count 1 \
      python3 bench/profile_layer.py $L --dtype fp16 --sparsity "$SP" --variant "$V" --runs 4 \
      >"$OUT/ncu_h2_$tag.txt" 2>&1
    echo "== $SP $V"
    grep -E "^variant|Duration|Registers Per|Achieved Occupancy|Executed Instructions  |Issued Warp|No Eligible|Warp Cycles Per Issued|Executed Ipc A|L1/TEX Hit|Shared Memory|Theoretical Occupancy" "$OUT/ncu_h2_$tag.txt" | head -16
  done
fi
say "done status=$status"
# at most 8 files come back: pack the logs
(cd "$OUT" && shopt -s nullglob && f=(*.log *.err *.txt *.csv) && [ ${#f[@]} -gt 0 ] && tar czf logs.tgz "${f[@]}" && rm -f "${f[@]}")
for j in "$OUT"/bench_full.json "$OUT"/bench_sweep.json "$OUT"/bench_vector16.json "$OUT"/bench_tf32.json; do
  [ -f "$j" ] && python3 -c "import json,sys; from trt_sparse.commands.bench_kernels_cmd import format_summary; print(sys.argv[1]); print(format_summary(json.load(open(sys.argv[1]))['summary']))" "$j"
done
exit $status
