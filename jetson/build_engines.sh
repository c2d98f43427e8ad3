#!/usr/bin/env bash
# Build dense and sparse TensorRT engines from an ONNX pair with trtexec.
# Works with trtexec of TensorRT 8.x (JetPack 4.6/5.x) and 10.x (JetPack 6, x86).
# Run with --help for the options.
# shellcheck source-path=SCRIPTDIR
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$SCRIPT_DIR/.." && pwd)
PROG=$(basename "$0")
# shellcheck source=common.sh
. "$SCRIPT_DIR/common.sh"

DENSE=""
SPARSE=""
PLUGIN=""
NAME=""
PRECISIONS="fp16"
OUT_DIR="out/jetson"
WORKSPACE=1024
SHAPES=""
TRTEXEC_ARG=""
PLUGIN_MODE="auto"
TIMING_CACHE=""
FORCE=0
DRY_RUN=0
EXTRA=()

usage() {
  cat <<EOF
Usage: $PROG --dense MODEL.onnx --sparse MODEL_sparse.onnx [options]

Build TensorRT engines for the dense model and its trt-sparse rewrite with trtexec:
  OUT_DIR/engines/NAME_dense_PREC.engine and NAME_sparse_PREC.engine
with build logs in OUT_DIR/logs/. The plugin library is passed the way the installed
trtexec accepts it: --plugins (TensorRT 8.0-8.5), --staticPlugins or --dynamicPlugins
(8.6, 10.x; --dynamicPlugins when the library exports getCreators).

Options:
  --dense FILE          dense ONNX model (the original)
  --sparse FILE         sparse ONNX model (output of 'trt-sparse convert')
  --plugin FILE         libtrt_sparse_plugin.so (default: \$TRT_SPARSE_PLUGIN_LIB,
                        then build-jetson/ or build/ of this repository)
  --name NAME           model name used in file names (default: dense file name without .onnx)
  --precision LIST      fp16, fp32 or fp32,fp16 (default: fp16)
  --out-dir DIR         output folder (default: out/jetson)
  --workspace MIB       builder workspace in MiB (default: 1024; 256-512 on a 4 GB Nano)
  --shapes SPEC         input shapes for dynamic inputs, e.g. input:1x3x224x224
  --timing-cache FILE   trtexec --timingCacheFile (speeds up rebuilds)
  --trtexec PATH        trtexec to use (default: \$TRTEXEC, PATH, /usr/src/tensorrt/bin)
  --plugin-mode MODE    auto, plugins, static or dynamic (default: auto)
  --trtexec-arg ARG     extra argument for every trtexec build (repeatable)
  --force               rebuild engines that already exist
  --dry-run             print the trtexec commands instead of running them
  -h, --help            show this help

Engines newer than their ONNX file (and plugin) are kept unless --force is given.
EOF
}

while [[ $# -gt 0 ]]; do
  case $1 in
    --dense) need_arg "$@"; DENSE=$2; shift 2 ;;
    --sparse) need_arg "$@"; SPARSE=$2; shift 2 ;;
    --plugin) need_arg "$@"; PLUGIN=$2; shift 2 ;;
    --name) need_arg "$@"; NAME=$2; shift 2 ;;
    --precision) need_arg "$@"; PRECISIONS=$2; shift 2 ;;
    --out-dir) need_arg "$@"; OUT_DIR=$2; shift 2 ;;
    --workspace) need_arg "$@"; WORKSPACE=$2; shift 2 ;;
    --shapes) need_arg "$@"; SHAPES=$2; shift 2 ;;
    --timing-cache) need_arg "$@"; TIMING_CACHE=$2; shift 2 ;;
    --trtexec) need_arg "$@"; TRTEXEC_ARG=$2; shift 2 ;;
    --plugin-mode) need_arg "$@"; PLUGIN_MODE=$2; shift 2 ;;
    --trtexec-arg) need_arg "$@"; EXTRA+=("$2"); shift 2 ;;
    --force) FORCE=1; shift ;;
    --dry-run) DRY_RUN=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown option '$1' (see --help)" ;;
  esac
done

[[ -n $DENSE || -n $SPARSE ]] || die "give --dense and/or --sparse ONNX files (see --help)"
for f in "$DENSE" "$SPARSE"; do
  [[ -z $f || -f $f ]] || die "ONNX file not found: $f"
done
if [[ -z $NAME ]]; then
  NAME=$(basename "${DENSE:-$SPARSE}")
  NAME=${NAME%.onnx}
  [[ -n $DENSE ]] || NAME=${NAME%_sparse}
fi
[[ $NAME =~ ^[A-Za-z0-9][A-Za-z0-9._+-]*$ ]] || die "--name '$NAME' may only hold letters, digits and . _ + -"
[[ $WORKSPACE =~ ^[1-9][0-9]*$ ]] || die "--workspace must be a positive integer (MiB), got '$WORKSPACE'"

IFS=, read -r -a PREC_LIST <<<"$PRECISIONS"
((${#PREC_LIST[@]})) || die "--precision is empty"
for p in "${PREC_LIST[@]}"; do
  [[ $p == fp16 || $p == fp32 ]] || die "--precision takes fp16, fp32 or a comma list of them, got '$p'"
done

if [[ -n $SPARSE ]]; then
  if [[ -z $PLUGIN ]]; then
    PLUGIN=$(default_plugin) || die "no plugin library: pass --plugin PATH/libtrt_sparse_plugin.so (build it with jetson/build_plugin.sh)"
  fi
  [[ -f $PLUGIN ]] || die "plugin library not found: $PLUGIN"
  PLUGIN=$(abspath "$PLUGIN")
fi

find_trtexec "$TRTEXEC_ARG"
probe_trtexec
note "trtexec: $TRTEXEC (TensorRT $TRT_VERSION)"

# Flags that changed names between TensorRT 8.x and 10.x.
if trtexec_has --skipInference; then BUILD_ONLY=--skipInference; else BUILD_ONLY=--buildOnly; fi
if trtexec_has --memPoolSize; then WS_ARG="--memPoolSize=workspace:$WORKSPACE"; else WS_ARG="--workspace=$WORKSPACE"; fi
PLUGIN_FLAG=""
if [[ -n $SPARSE ]]; then
  PLUGIN_FLAG=$(plugin_flag "$PLUGIN" "$PLUGIN_MODE")
  note "plugin: $PLUGIN (passed as $PLUGIN_FLAG)"
fi

ENGINE_DIR="$OUT_DIR/engines"
LOG_DIR="$OUT_DIR/logs"
((DRY_RUN)) || mkdir -p "$ENGINE_DIR" "$LOG_DIR"

# newer_than A B...: true when file A exists and is newer than every existing B.
newer_than() {
  local a=$1; shift
  [[ -f $a ]] || return 1
  local b
  for b in "$@"; do
    [[ -z $b || ! -e $b || $a -nt $b ]] || return 1
  done
}

built=()
for prec in "${PREC_LIST[@]}"; do
  for variant in dense sparse; do
    if [[ $variant == dense ]]; then onnx=$DENSE; else onnx=$SPARSE; fi
    [[ -n $onnx ]] || continue
    engine="$ENGINE_DIR/${NAME}_${variant}_${prec}.engine"
    log="$LOG_DIR/${NAME}_${variant}_${prec}.build.log"
    deps=("$onnx")
    [[ $variant == sparse ]] && deps+=("$PLUGIN")
    if ((!FORCE && !DRY_RUN)) && newer_than "$engine" "${deps[@]}"; then
      note "keeping $engine (newer than its inputs; --force rebuilds)"
      built+=("$engine")
      continue
    fi
    tmp_engine="$engine.tmp"
    cmd=("$TRTEXEC" "--onnx=$onnx" "--saveEngine=$tmp_engine" "$WS_ARG" "$BUILD_ONLY")
    [[ $prec == fp16 ]] && cmd+=(--fp16)
    [[ -n $SHAPES ]] && cmd+=("--shapes=$SHAPES")
    [[ -n $TIMING_CACHE ]] && cmd+=("--timingCacheFile=$TIMING_CACHE")
    [[ $variant == sparse ]] && cmd+=("$PLUGIN_FLAG=$PLUGIN")
    cmd+=(${EXTRA[@]+"${EXTRA[@]}"})
    if ((DRY_RUN)); then
      print_cmd "${cmd[@]}"
      continue
    fi
    note "building $engine (log: $log)"
    rm -f "$tmp_engine"
    if ! "${cmd[@]}" >"$log.tmp" 2>&1; then
      mv -f "$log.tmp" "$log"
      rm -f "$tmp_engine"
      reason=$(grep -E '\[E\]|Assertion failed' "$log" | tail -n 3 | sed 's/^\[[^]]*\] //' | tr '\n' ' ')
      die "trtexec failed to build $engine: ${reason:-see $log} (full log: $log)"
    fi
    mv -f "$log.tmp" "$log"
    [[ -s $tmp_engine ]] || die "trtexec exited 0 but wrote no engine (see $log)"
    mv -f "$tmp_engine" "$engine"
    built+=("$engine")
  done
done

((DRY_RUN)) && exit 0
echo "engines (TensorRT $TRT_VERSION):"
for e in ${built[@]+"${built[@]}"}; do
  printf '  %-60s %12s bytes\n' "$e" "$(file_bytes "$e")"
done
echo "next:  jetson/bench.sh --engine-dir $ENGINE_DIR${PLUGIN:+ --plugin $PLUGIN}"
