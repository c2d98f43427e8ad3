#!/usr/bin/env bash
# Time dense and sparse TensorRT engines with trtexec, optionally sample power, and write
# a summary (text + CSV) with median latency, throughput, speedup and engine sizes.
# Works with trtexec of TensorRT 8.x (JetPack 4.6/5.x) and 10.x (JetPack 6, x86).
# Run with --help for the options.
# shellcheck source-path=SCRIPTDIR
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$SCRIPT_DIR/.." && pwd)
PROG=$(basename "$0")
# shellcheck source=common.sh
. "$SCRIPT_DIR/common.sh"

OUT_DIR="out/jetson"
ENGINE_DIR=""
PLUGIN=""
TRTEXEC_ARG=""
PLUGIN_MODE="auto"
RUNS=5
DURATION=10
WARMUP=2000
ITERATIONS=100
AVG_RUNS=10
COOLDOWN=2
CUDA_GRAPH=0
SPIN_WAIT=0
NO_TRANSFERS=0
SHAPES=""
POWER="auto"
POWER_INTERVAL=100
PYTHON=${PYTHON:-python3}
DRY_RUN=0
CHECK=1
CHECK_TOL=""
BUILD_ARGS=()
EXTRA=()

usage() {
  cat <<EOF
Usage: $PROG [--dense MODEL.onnx --sparse MODEL_sparse.onnx | --engine-dir DIR] [options]

Time every NAME_{dense,sparse}_{fp16,fp32}.engine of the engine folder with trtexec,
RUNS times each (dense and sparse interleaved), optionally sampling power with tegrastats
(Jetson) or nvidia-smi (x86), then summarise with trtexec_parse.py into
  OUT_DIR/summary.txt, OUT_DIR/summary.csv, OUT_DIR/summary.json
The per-run trtexec logs (OUT_DIR/logs/) and OUT_DIR/runs.csv are kept for re-analysis.
Given --dense/--sparse, the engines are built first with build_engines.sh.

Timing options (trtexec's own statistics; each run reports min/mean/median/percentiles):
  --runs N              trtexec runs per engine (default: 5)
  --duration S          seconds of timed inference per run (default: 10)
  --warmup MS           warm-up per run in ms (default: 2000)
  --iterations N        at least N timed queries per run (default: 100)
  --avg-runs N          trtexec --avgRuns (default: 10)
  --cooldown S          pause between runs, seconds (default: 2)
  --cuda-graph          trtexec --useCudaGraph (less launch overhead)
  --spin-wait           trtexec --useSpinWait (steadier timings)
  --no-data-transfers   trtexec --noDataTransfers (GPU time only, no H2D/D2H copies)
  --shapes SPEC         input shapes for dynamic inputs, e.g. input:1x3x224x224

Output check (after timing; needs python3):
  --no-check            skip it. By default every sparse engine and its dense twin run once
                        on the same random input (trtexec --loadInputs/--exportOutput); the
                        outputs must agree: max|dense - sparse| / max|dense| <= 1e-3 (fp32)
                        or 3e-2 (fp16); bench.sh exits 3 when they do not (see check.txt)
  --check-tol T         tolerance for both precisions

Power:
  --power MODE          auto, tegrastats, nvidia-smi or none (default: auto = tegrastats
                        when present, else none)
  --power-interval MS   sampling interval (default: 100)

Engines and tools:
  --engine-dir DIR      engines to time (default: OUT_DIR/engines)
  --dense FILE, --sparse FILE, --name NAME, --precision LIST, --workspace MIB, --force
                        build the engines first (passed to build_engines.sh)
  --plugin FILE         libtrt_sparse_plugin.so for the sparse engines (default:
                        \$TRT_SPARSE_PLUGIN_LIB, then build-jetson/ or build/)
  --plugin-mode MODE    auto, plugins, static or dynamic (default: auto)
  --trtexec PATH        trtexec to use (default: \$TRTEXEC, PATH, /usr/src/tensorrt/bin)
  --trtexec-arg ARG     extra argument for every timing run (repeatable)
  --out-dir DIR         results folder (default: out/jetson)
  --dry-run             print the trtexec commands instead of running them
  -h, --help            show this help

Before timing on a Jetson: sudo nvpmodel -m 0 && sudo jetson_clocks (see jetson/README.md).
EOF
}

while [[ $# -gt 0 ]]; do
  case $1 in
    --runs) need_arg "$@"; RUNS=$2; shift 2 ;;
    --duration) need_arg "$@"; DURATION=$2; shift 2 ;;
    --warmup) need_arg "$@"; WARMUP=$2; shift 2 ;;
    --iterations) need_arg "$@"; ITERATIONS=$2; shift 2 ;;
    --avg-runs) need_arg "$@"; AVG_RUNS=$2; shift 2 ;;
    --cooldown) need_arg "$@"; COOLDOWN=$2; shift 2 ;;
    --cuda-graph) CUDA_GRAPH=1; shift ;;
    --spin-wait) SPIN_WAIT=1; shift ;;
    --no-data-transfers) NO_TRANSFERS=1; shift ;;
    --shapes) need_arg "$@"; SHAPES=$2; shift 2 ;;
    --power) need_arg "$@"; POWER=$2; shift 2 ;;
    --power-interval) need_arg "$@"; POWER_INTERVAL=$2; shift 2 ;;
    --engine-dir) need_arg "$@"; ENGINE_DIR=$2; shift 2 ;;
    --dense|--sparse|--name|--precision|--workspace) need_arg "$@"; BUILD_ARGS+=("$1" "$2"); shift 2 ;;
    --force) BUILD_ARGS+=(--force); shift ;;
    --plugin) need_arg "$@"; PLUGIN=$2; shift 2 ;;
    --plugin-mode) need_arg "$@"; PLUGIN_MODE=$2; shift 2 ;;
    --trtexec) need_arg "$@"; TRTEXEC_ARG=$2; shift 2 ;;
    --trtexec-arg) need_arg "$@"; EXTRA+=("$2"); shift 2 ;;
    --out-dir) need_arg "$@"; OUT_DIR=$2; shift 2 ;;
    --no-check) CHECK=0; shift ;;
    --check-tol) need_arg "$@"; CHECK_TOL=$2; shift 2 ;;
    --dry-run) DRY_RUN=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown option '$1' (see --help)" ;;
  esac
done

for pair in "runs:$RUNS" "duration:$DURATION" "warmup:$WARMUP" "iterations:$ITERATIONS" \
  "avg-runs:$AVG_RUNS" "power-interval:$POWER_INTERVAL"; do
  [[ ${pair#*:} =~ ^[1-9][0-9]*$ ]] || die "--${pair%%:*} must be a positive integer, got '${pair#*:}'"
done
[[ -z $CHECK_TOL || $CHECK_TOL =~ ^[0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?$ ]] || die "--check-tol must be a number, got '$CHECK_TOL'"
[[ $COOLDOWN =~ ^[0-9]+$ ]] || die "--cooldown must be a whole number of seconds, got '$COOLDOWN'"
[[ $OUT_DIR != *,* && $OUT_DIR != *\"* ]] || die "--out-dir may not contain commas or quotes"

# ---------------------------------------------------------------- build first when asked
has_build_input=0
for a in ${BUILD_ARGS[@]+"${BUILD_ARGS[@]}"}; do
  [[ $a == --dense || $a == --sparse ]] && has_build_input=1
done
if ((has_build_input)); then
  bcmd=(bash "$SCRIPT_DIR/build_engines.sh" --out-dir "$OUT_DIR" --plugin-mode "$PLUGIN_MODE" "${BUILD_ARGS[@]}")
  [[ -n $PLUGIN ]] && bcmd+=(--plugin "$PLUGIN")
  [[ -n $TRTEXEC_ARG ]] && bcmd+=(--trtexec "$TRTEXEC_ARG")
  [[ -n $SHAPES ]] && bcmd+=(--shapes "$SHAPES")
  ((DRY_RUN)) && bcmd+=(--dry-run)
  "${bcmd[@]}"
elif ((${#BUILD_ARGS[@]})); then
  die "--name/--precision/--workspace/--force only apply with --dense/--sparse; to time built engines give --engine-dir"
fi
[[ -n $ENGINE_DIR ]] || ENGINE_DIR="$OUT_DIR/engines"

find_trtexec "$TRTEXEC_ARG"
probe_trtexec

# ---------------------------------------------------------------- engines
engines=()
if [[ -d $ENGINE_DIR ]]; then
  for e in "$ENGINE_DIR"/*.engine; do
    [[ -f $e ]] && engines+=("$e")
  done
fi
if ((${#engines[@]} == 0)); then
  ((DRY_RUN && has_build_input)) && exit 0
  die "no *.engine files in $ENGINE_DIR (build them with jetson/build_engines.sh or pass --dense/--sparse)"
fi
need_plugin=0
for e in "${engines[@]}"; do
  b=$(basename "$e")
  [[ $b =~ ^(.+)_(dense|sparse)_(fp16|fp32)\.engine$ ]] || die "engine '$b' is not named NAME_{dense,sparse}_{fp16,fp32}.engine (as build_engines.sh names them)"
  [[ $e != *,* && $e != *\"* ]] || die "engine path '$e' may not contain commas or quotes"
  [[ ${BASH_REMATCH[2]} == sparse ]] && need_plugin=1
done
PLUGIN_FLAG=""
if ((need_plugin)); then
  if [[ -z $PLUGIN ]]; then
    PLUGIN=$(default_plugin) || die "sparse engines need the plugin: pass --plugin PATH/libtrt_sparse_plugin.so"
  fi
  [[ -f $PLUGIN ]] || die "plugin library not found: $PLUGIN"
  PLUGIN=$(abspath "$PLUGIN")
  PLUGIN_FLAG=$(plugin_flag "$PLUGIN" "$PLUGIN_MODE")
fi

# ---------------------------------------------------------------- power sampler
case $POWER in
  auto)
    if command -v tegrastats >/dev/null 2>&1; then POWER=tegrastats; else POWER=none; fi ;;
  tegrastats)
    command -v tegrastats >/dev/null 2>&1 || die "--power tegrastats: tegrastats not found (it ships with L4T on Jetson)" ;;
  nvidia-smi)
    command -v nvidia-smi >/dev/null 2>&1 || die "--power nvidia-smi: nvidia-smi not found" ;;
  none) ;;
  *) die "--power must be auto, tegrastats, nvidia-smi or none, got '$POWER'" ;;
esac
POWER_PID=""
start_power() { # start_power LOGFILE
  case $POWER in
    tegrastats) tegrastats --interval "$POWER_INTERVAL" --logfile "$1" & POWER_PID=$! ;;
    nvidia-smi) nvidia-smi --query-gpu=power.draw --format=csv,noheader,nounits -i 0 -lms "$POWER_INTERVAL" >"$1" & POWER_PID=$! ;;
    *) POWER_PID="" ;;
  esac
}
stop_power() {
  if [[ -n $POWER_PID ]]; then
    kill "$POWER_PID" 2>/dev/null || true
    wait "$POWER_PID" 2>/dev/null || true
    POWER_PID=""
  fi
}
trap stop_power EXIT
trap 'stop_power; exit 130' INT TERM

# ---------------------------------------------------------------- timing runs
LOG_DIR="$OUT_DIR/logs"
((DRY_RUN)) || mkdir -p "$LOG_DIR"
common=("--warmUp=$WARMUP" "--duration=$DURATION" "--iterations=$ITERATIONS" "--avgRuns=$AVG_RUNS")
((CUDA_GRAPH)) && common+=(--useCudaGraph)
((SPIN_WAIT)) && common+=(--useSpinWait)
((NO_TRANSFERS)) && common+=(--noDataTransfers)
[[ -n $SHAPES ]] && common+=("--shapes=$SHAPES")
common+=(${EXTRA[@]+"${EXTRA[@]}"})

manifest_tmp="$OUT_DIR/runs.csv.tmp"
if ((!DRY_RUN)); then
  echo "model,variant,precision,engine,engine_bytes,run,log,power_log" >"$manifest_tmp"
  {
    echo "date=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "host=$(uname -n) $(uname -m) kernel $(uname -r)"
    echo "trtexec=$TRTEXEC"
    echo "tensorrt=$TRT_VERSION"
    [[ -r /etc/nv_tegra_release ]] && echo "l4t=$(head -n 1 /etc/nv_tegra_release)"
    command -v nvpmodel >/dev/null 2>&1 && echo "nvpmodel=$(nvpmodel -q 2>/dev/null | tr '\n' ' ')"
    [[ -n $PLUGIN ]] && echo "plugin=$PLUGIN ($PLUGIN_FLAG)"
    echo "runs=$RUNS duration=${DURATION}s warmup=${WARMUP}ms iterations=$ITERATIONS avgRuns=$AVG_RUNS"
    echo "trtexec_args=${common[*]}"
    echo "power=$POWER interval=${POWER_INTERVAL}ms"
  } >"$OUT_DIR/env.txt"
fi
note "trtexec: $TRTEXEC (TensorRT $TRT_VERSION); ${#engines[@]} engine(s) x $RUNS run(s); power: $POWER"

for ((run = 1; run <= RUNS; run++)); do
  for e in "${engines[@]}"; do
    b=$(basename "$e" .engine)
    [[ $b.engine =~ ^(.+)_(dense|sparse)_(fp16|fp32)\.engine$ ]]
    model=${BASH_REMATCH[1]} variant=${BASH_REMATCH[2]} prec=${BASH_REMATCH[3]}
    cmd=("$TRTEXEC" "--loadEngine=$e" "${common[@]}")
    [[ $variant == sparse ]] && cmd+=("$PLUGIN_FLAG=$PLUGIN")
    if ((DRY_RUN)); then
      print_cmd "${cmd[@]}"
      continue
    fi
    log="logs/$b.run$run.log"
    power_log=""
    [[ $POWER != none ]] && power_log="logs/$b.run$run.power.log"
    note "run $run/$RUNS: $b"
    [[ -n $power_log ]] && start_power "$OUT_DIR/$power_log"
    rc=0
    "${cmd[@]}" >"$OUT_DIR/$log" 2>&1 || rc=$?
    stop_power
    if ((rc != 0)); then
      reason=$(grep -E '\[E\]' "$OUT_DIR/$log" | tail -n 2 | sed 's/^\[[^]]*\] //' | tr '\n' ' ')
      die "trtexec failed (exit $rc) on $e: ${reason:-see $OUT_DIR/$log} (full log: $OUT_DIR/$log)"
    fi
    echo "$model,$variant,$prec,$(abspath "$e"),$(file_bytes "$e"),$run,$log,$power_log" >>"$manifest_tmp"
    if ((COOLDOWN > 0)); then sleep "$COOLDOWN"; fi
  done
done
((DRY_RUN)) && exit 0
mv -f "$manifest_tmp" "$OUT_DIR/runs.csv"

# ---------------------------------------------------------------- summary
if ! command -v "$PYTHON" >/dev/null 2>&1; then
  note "no $PYTHON: logs are in $OUT_DIR/logs; summarise later with: python3 jetson/trtexec_parse.py summary $OUT_DIR/runs.csv"
  exit 0
fi
"$PYTHON" "$SCRIPT_DIR/trtexec_parse.py" summary "$OUT_DIR/runs.csv" \
  --text "$OUT_DIR/summary.txt" --csv "$OUT_DIR/summary.csv" --json "$OUT_DIR/summary.json"
echo "written: $OUT_DIR/summary.txt $OUT_DIR/summary.csv $OUT_DIR/summary.json"

# ---------------------------------------------------------------- output check
((CHECK)) || exit 0
CHECK_DIR="$OUT_DIR/check"
mkdir -p "$CHECK_DIR"
: >"$OUT_DIR/check.txt"
mismatch=0
checked=0
for e in "${engines[@]}"; do
  b=$(basename "$e" .engine)
  [[ $b.engine =~ ^(.+)_sparse_(fp16|fp32)\.engine$ ]] || continue
  model=${BASH_REMATCH[1]} prec=${BASH_REMATCH[2]}
  dense_engine="$(dirname "$e")/${model}_dense_${prec}.engine"
  [[ -f $dense_engine ]] || { note "check: no ${model}_dense_${prec}.engine to compare $b with"; continue; }
  spec=$("$PYTHON" "$SCRIPT_DIR/trtexec_parse.py" make-inputs "$OUT_DIR/logs/${model}_dense_${prec}.run1.log" \
    --out-dir "$CHECK_DIR") || die "check: cannot make inputs for $model $prec"
  for variant in dense sparse; do
    eng="$(dirname "$e")/${model}_${variant}_${prec}.engine"
    cmd=("$TRTEXEC" "--loadEngine=$eng" "--loadInputs=$spec" "--exportOutput=$CHECK_DIR/${model}_${variant}_${prec}.output.json"
      --warmUp=0 --duration=0 --iterations=1)
    [[ -n $SHAPES ]] && cmd+=("--shapes=$SHAPES")
    [[ $variant == sparse ]] && cmd+=("$PLUGIN_FLAG=$PLUGIN")
    "${cmd[@]}" >"$CHECK_DIR/${model}_${variant}_${prec}.log" 2>&1 ||
      die "check: trtexec failed on $eng (see $CHECK_DIR/${model}_${variant}_${prec}.log)"
  done
  tol=$CHECK_TOL
  [[ -n $tol ]] || { if [[ $prec == fp16 ]]; then tol=3e-2; else tol=1e-3; fi; }
  rc=0
  "$PYTHON" "$SCRIPT_DIR/trtexec_parse.py" compare "$CHECK_DIR/${model}_dense_${prec}.output.json" \
    "$CHECK_DIR/${model}_sparse_${prec}.output.json" --tol "$tol" --label "$model $prec " >>"$OUT_DIR/check.txt" || rc=$?
  case $rc in
    0) ;;
    4) mismatch=1 ;;
    *) die "check: cannot compare the outputs of $model $prec (exit $rc)" ;;
  esac
  checked=$((checked + 1))
done
cat "$OUT_DIR/check.txt"
if ((mismatch)); then
  note "the sparse engine's outputs differ from the dense engine's beyond the tolerance (see $OUT_DIR/check.txt)"
  exit 3
fi
if ((checked)); then
  echo "output check passed: $OUT_DIR/check.txt"
fi
