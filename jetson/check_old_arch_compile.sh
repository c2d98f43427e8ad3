#!/usr/bin/env bash
# Off-device check that the CUDA kernels compile for the Jetson GPUs that CUDA 13's nvcc
# can no longer target (Nano/TX1 sm_53, TX2 sm_62, Xavier sm_72), with -std=c++14.
# Device code: clang++ -> PTX -> ptxas of a CUDA <= 12 toolkit; host code: clang++.
# A stand-in for JetPack's own nvcc (CUDA 10.2 on JetPack 4.6), not a replacement for it.
# Run with --help for the options.
# shellcheck source-path=SCRIPTDIR
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$SCRIPT_DIR/.." && pwd)
PROG=$(basename "$0")
# shellcheck source=common.sh
. "$SCRIPT_DIR/common.sh"

CUDA_PATH_ARG=""
PIP_TARGET=""
ARCHS="53 62 72"
SOURCES="$REPO_ROOT/plugin/kernels"
CLANG=${CLANG:-clang++}
JOBS=$(nproc 2>/dev/null || echo 1)

usage() {
  cat <<EOF
Usage: $PROG (--cuda-path DIR | --pip-target DIR) [options]

Compile plugin/kernels/*.cu for old Jetson architectures without a Jetson: device code
with clang++ to PTX and ptxas to SASS for each architecture, host code with clang++;
both with -std=c++14. Prints one line per file and architecture and a SUMMARY line;
exit 0 when everything compiled, 1 otherwise, 3 when a prerequisite is missing.

Options:
  --cuda-path DIR    a CUDA <= 12 toolkit (include/, nvvm/libdevice/, bin/ptxas)
  --pip-target DIR   build one from the wheels installed with
                     pip install --target DIR nvidia-cuda-nvcc-cu11==11.8.89 nvidia-cuda-runtime-cu11==11.8.89
  --arch "LIST"      architectures (default: "53 62 72")
  --sources DIR      kernel sources (default: plugin/kernels)
  --jobs N           files compiled at once (default: the number of CPUs, $JOBS here)
  -h, --help         show this help

Needs clang++ (Debian: apt-get install clang; \$CLANG overrides).
EOF
}

while [[ $# -gt 0 ]]; do
  case $1 in
    --cuda-path) need_arg "$@"; CUDA_PATH_ARG=$2; shift 2 ;;
    --pip-target) need_arg "$@"; PIP_TARGET=$2; shift 2 ;;
    --arch) need_arg "$@"; ARCHS=$2; shift 2 ;;
    --sources) need_arg "$@"; SOURCES=$2; shift 2 ;;
    --jobs) need_arg "$@"; JOBS=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown option '$1' (see --help)" ;;
  esac
done

missing() { echo "$PROG: $*" >&2; exit 3; }
command -v "$CLANG" >/dev/null 2>&1 || missing "no $CLANG (apt-get install clang)"
[[ -n $CUDA_PATH_ARG || -n $PIP_TARGET ]] || die "give --cuda-path or --pip-target (see --help)"
for a in $ARCHS; do
  [[ $a =~ ^[0-9]+$ ]] || die "--arch takes numbers like \"53 62\", got '$a'"
done
[[ $JOBS =~ ^[1-9][0-9]*$ ]] || die "--jobs takes a positive number, got '$JOBS'"
compgen -G "$SOURCES/*.cu" >/dev/null || die "no .cu files in $SOURCES"

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

if [[ -n $PIP_TARGET ]]; then
  nv=$PIP_TARGET/nvidia
  [[ -x $nv/cuda_nvcc/bin/ptxas && -f $nv/cuda_runtime/include/cuda_runtime.h ]] ||
    missing "$PIP_TARGET lacks nvidia/cuda_nvcc/bin/ptxas or nvidia/cuda_runtime/include (see --help)"
  CUDA_DIR=$WORK/cuda
  mkdir -p "$CUDA_DIR/include" "$CUDA_DIR/bin" "$CUDA_DIR/nvvm" "$CUDA_DIR/lib64"  # clang checks for lib64/
  cp -r "$nv/cuda_runtime/include/." "$nv/cuda_nvcc/include/." "$CUDA_DIR/include/"
  cp -r "$nv/cuda_nvcc/nvvm/." "$CUDA_DIR/nvvm/"
  cp "$nv/cuda_nvcc/bin/ptxas" "$CUDA_DIR/bin/"
  # clang's CUDA wrapper includes this cuRAND header, which the two wheels do not ship
  [[ -f $CUDA_DIR/include/curand_mtgp32_kernel.h ]] || : >"$CUDA_DIR/include/curand_mtgp32_kernel.h"
  # clang recognises a CUDA installation by its version.txt
  v=$(sed -n 's/^#define CUDA_VERSION \([0-9]*\).*/\1/p' "$CUDA_DIR/include/cuda.h" | head -n 1)
  [[ -n $v ]] || missing "no CUDA_VERSION in $CUDA_DIR/include/cuda.h"
  echo "CUDA Version $((v / 1000)).$((v % 1000 / 10)).0" >"$CUDA_DIR/version.txt"
else
  CUDA_DIR=$(abspath "$CUDA_PATH_ARG")
fi
PTXAS=$CUDA_DIR/bin/ptxas
[[ -x $PTXAS && -f $CUDA_DIR/include/cuda_runtime.h ]] || missing "$CUDA_DIR has no bin/ptxas or include/cuda_runtime.h"
compgen -G "$CUDA_DIR/nvvm/libdevice/libdevice*.bc" >/dev/null || missing "$CUDA_DIR has no nvvm/libdevice"
cuda_ver=$(sed -n 's/^#define CUDA_VERSION \([0-9]*\).*/\1/p' "$CUDA_DIR/include/cuda.h" 2>/dev/null | head -n 1)
echo "clang: $("$CLANG" --version | head -n 1); CUDA headers/ptxas: ${cuda_ver:-unknown} ($CUDA_DIR)"

flags=(-x cuda "--cuda-path=$CUDA_DIR" -std=c++14 -O2 -Wno-unknown-cuda-version -I "$SOURCES")
# one file: its device code for each architecture, then its host code; lines to $WORK/<name>.out
compile_file() {
  local src=$1 name a ptx err first
  name=$(basename "$src")
  err=$WORK/${name%.cu}.err
  for a in $ARCHS; do
    ptx=$WORK/${name%.cu}.sm_$a.ptx
    if "$CLANG" "${flags[@]}" "--cuda-gpu-arch=sm_$a" --cuda-device-only -S "$src" -o "$ptx" 2>"$err" &&
      "$PTXAS" "-arch=sm_$a" "$ptx" -o "${ptx%.ptx}.cubin" 2>>"$err"; then
      echo "$name sm_$a: OK ($(grep -c '\.entry ' "$ptx") kernels)"
    else
      echo "$name sm_$a: FAILED: $(grep -m 3 -E 'error|fatal' "$err" | tr '\n' ' ')"
    fi
  done
  first=${ARCHS%% *}
  if "$CLANG" "${flags[@]}" "--cuda-gpu-arch=sm_$first" --cuda-host-only -c "$src" -o "$WORK/${name%.cu}.host.o" 2>"$err"; then
    echo "$name host: OK"
  else
    echo "$name host: FAILED: $(grep -m 3 -E 'error|fatal' "$err" | tr '\n' ' ')"
  fi
}

# files in parallel (up to --jobs), output printed in file order
for src in "$SOURCES"/*.cu; do
  while (( $(jobs -rp | wc -l) >= JOBS )); do wait -n || true; done
  name=$(basename "$src")
  compile_file "$src" >"$WORK/${name%.cu}.out" 2>&1 &
done
wait
ok=0 failed=0
for src in "$SOURCES"/*.cu; do
  name=$(basename "$src")
  out=$WORK/${name%.cu}.out
  cat "$out"
  ok=$((ok + $(grep -c ': OK' "$out" || true)))
  failed=$((failed + $(grep -c ': FAILED' "$out" || true)))
done
# a file whose job died without a line for each architecture and its host code counts as failed
expected=$(( $(compgen -G "$SOURCES/*.cu" | wc -l) * ($(wc -w <<<"$ARCHS") + 1) ))
(( ok + failed == expected )) || failed=$((failed + expected - ok - failed))
echo "SUMMARY ok $ok failed $failed"
((failed == 0))
