#!/usr/bin/env bash
# Build libtrt_sparse_plugin.so (and the kernel library) on a Jetson or an x86 workstation.
#
# Detects JetPack/L4T, TensorRT (from its headers), CUDA (nvcc), CMake and the GPU
# architecture, configures plugin/ with CMake for that architecture and builds it.
# Works with CMake 3.10 (JetPack 4.6) and newer; bash 4, coreutils, grep, sed, awk only.
# Run with --help for the options.
# shellcheck source-path=SCRIPTDIR
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$SCRIPT_DIR/.." && pwd)
PROG=$(basename "$0")
# shellcheck source=common.sh
. "$SCRIPT_DIR/common.sh"

# Paths read during detection; overridable so the detection can be tested off-device.
NV_TEGRA_RELEASE_FILE=${NV_TEGRA_RELEASE_FILE:-/etc/nv_tegra_release}
DEVICE_TREE_COMPATIBLE=${DEVICE_TREE_COMPATIBLE:-/proc/device-tree/compatible}

SOURCE_DIR="$REPO_ROOT/plugin"
BUILD_DIR="$REPO_ROOT/build-jetson"
ARCH=""
TRT_ROOT="${TENSORRT_ROOT:-}"
TRT_INCLUDE=""
CUDA_ROOT="${CUDA_HOME:-${CUDA_PATH:-}}"
CUDA_ROOT_GIVEN=0
JOBS=""
BUILD_TYPE="Release"
CLEAN=0
DETECT_ONLY=0
DRY_RUN=0

usage() {
  cat <<EOF
Usage: $PROG [options]

Build the trt-sparse TensorRT plugin (libtrt_sparse_plugin.so) for this machine's GPU.
Detects JetPack/L4T, TensorRT, CUDA, CMake and the GPU architecture (Nano/TX1 53,
TX2 62, Xavier 72, Orin 87; on x86 from nvidia-smi), then runs CMake on plugin/.

Options:
  --source DIR           plugin sources (default: $REPO_ROOT/plugin)
  --build-dir DIR        build folder (default: $REPO_ROOT/build-jetson)
  --arch SM              CUDA architecture without dot, e.g. 53 (Nano), 87 (Orin), 80 (A100)
                         (default: detected)
  --tensorrt-root DIR    TensorRT install root with include/ and lib/ (tar install);
                         default: \$TENSORRT_ROOT, else the system (JetPack/deb) install
  --tensorrt-include DIR folder holding NvInfer.h (overrides the search)
  --cuda-root DIR        CUDA toolkit root (default: \$CUDA_HOME, else nvcc on PATH,
                         else /usr/local/cuda)
  --jobs N               parallel build jobs (default: nproc, 2 when memory < 5 GiB)
  --build-type TYPE      CMake build type (default: Release)
  --clean                delete the build folder first
  --detect-only          print what was detected and exit
  --dry-run              print the CMake commands instead of running them
  -h, --help             show this help

Environment: TENSORRT_ROOT, CUDA_HOME. Afterwards point the benchmark scripts at the
library with --plugin BUILD_DIR/libtrt_sparse_plugin.so (or TRT_SPARSE_PLUGIN_LIB).
EOF
}


while [[ $# -gt 0 ]]; do
  case $1 in
    --source) need_arg "$@"; SOURCE_DIR=$2; shift 2 ;;
    --build-dir) need_arg "$@"; BUILD_DIR=$2; shift 2 ;;
    --arch) need_arg "$@"; ARCH=$2; shift 2 ;;
    --tensorrt-root) need_arg "$@"; TRT_ROOT=$2; shift 2 ;;
    --tensorrt-include) need_arg "$@"; TRT_INCLUDE=$2; shift 2 ;;
    --cuda-root) need_arg "$@"; CUDA_ROOT=$2; CUDA_ROOT_GIVEN=1; shift 2 ;;
    --jobs) need_arg "$@"; JOBS=$2; shift 2 ;;
    --build-type) need_arg "$@"; BUILD_TYPE=$2; shift 2 ;;
    --clean) CLEAN=1; shift ;;
    --detect-only) DETECT_ONLY=1; shift ;;
    --dry-run) DRY_RUN=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown option '$1' (see --help)" ;;
  esac
done

# version_ge A B: true when dotted version A >= B
version_ge() {
  local IFS=.
  local -a a b
  read -r -a a <<<"$1"
  read -r -a b <<<"$2"
  local i x y
  for i in 0 1 2; do
    x=${a[i]:-0}; y=${b[i]:-0}
    x=${x//[^0-9]/}; y=${y//[^0-9]/}
    x=${x:-0}; y=${y:-0}
    if ((10#$x > 10#$y)); then return 0; fi
    if ((10#$x < 10#$y)); then return 1; fi
  done
  return 0
}

[[ -n $TRT_ROOT ]] && TRT_ROOT=$(abspath "$TRT_ROOT")
[[ -n $TRT_INCLUDE ]] && TRT_INCLUDE=$(abspath "$TRT_INCLUDE")
BUILD_DIR=$(abspath "$BUILD_DIR")

# ---------------------------------------------------------------- Jetson / L4T
L4T_VERSION=""
if [[ -r $NV_TEGRA_RELEASE_FILE ]]; then
  # "# R32 (release), REVISION: 7.1, GCID: ..., BOARD: t210ref, EABI: aarch64, DATE: ..."
  L4T_VERSION=$(sed -n 's/^# R\([0-9][0-9]*\) (release), REVISION: \([0-9.]*\).*/\1.\2/p' "$NV_TEGRA_RELEASE_FILE" | head -n 1)
fi

jetpack_from_l4t() {
  case $1 in
    32.6.1) echo 4.6 ;; 32.7.1) echo 4.6.1 ;; 32.7.2) echo 4.6.2 ;; 32.7.3) echo 4.6.3 ;;
    32.7.4) echo 4.6.4 ;; 32.7.5) echo 4.6.5 ;; 32.7.6) echo 4.6.6 ;;
    35.1.0) echo 5.0.2 ;; 35.2.1) echo 5.1 ;; 35.3.1) echo 5.1.1 ;; 35.4.1) echo 5.1.2 ;;
    35.5.0) echo 5.1.3 ;; 35.6.0) echo 5.1.4 ;; 35.6.1) echo 5.1.5 ;;
    36.3.0) echo 6.0 ;; 36.4.0) echo 6.1 ;; 36.4.3) echo 6.2 ;; 36.4.4) echo 6.2.1 ;;
    *) echo "" ;;
  esac
}

JETPACK_VERSION=""
JETPACK_SOURCE=""
if command -v dpkg-query >/dev/null 2>&1; then
  JETPACK_VERSION=$(dpkg-query -W -f='${Version}' nvidia-jetpack 2>/dev/null | sed 's/[-+].*//' || true)
  [[ -n $JETPACK_VERSION ]] && JETPACK_SOURCE="dpkg nvidia-jetpack"
fi
if [[ -z $JETPACK_VERSION && -n $L4T_VERSION ]]; then
  JETPACK_VERSION=$(jetpack_from_l4t "$L4T_VERSION")
  [[ -n $JETPACK_VERSION ]] && JETPACK_SOURCE="from L4T $L4T_VERSION"
fi

TEGRA_CHIP=""
if [[ -r $DEVICE_TREE_COMPATIBLE ]]; then
  TEGRA_CHIP=$(tr '\0' '\n' <"$DEVICE_TREE_COMPATIBLE" | sed -n 's/^nvidia,\(tegra[0-9][0-9]*\)$/\1/p' | head -n 1)
fi

# ---------------------------------------------------------------- tools: cmake, nvcc
CMAKE_BIN=$(command -v cmake || true)
CMAKE_VERSION=""
if [[ -n $CMAKE_BIN ]]; then
  CMAKE_VERSION=$("$CMAKE_BIN" --version 2>/dev/null | sed -n 's/^cmake version \([0-9][0-9.]*\).*/\1/p' | head -n 1)
fi

NVCC=""
if ((CUDA_ROOT_GIVEN)) && [[ ! -x $CUDA_ROOT/bin/nvcc ]]; then
  die "no nvcc in $CUDA_ROOT/bin (from --cuda-root)"
fi
if [[ -n $CUDA_ROOT && -x $CUDA_ROOT/bin/nvcc ]]; then
  NVCC=$CUDA_ROOT/bin/nvcc
elif command -v nvcc >/dev/null 2>&1; then
  NVCC=$(command -v nvcc)
elif [[ -x /usr/local/cuda/bin/nvcc ]]; then
  NVCC=/usr/local/cuda/bin/nvcc   # JetPack installs CUDA here without putting it on PATH
fi
CUDA_VERSION=""
if [[ -n $NVCC ]]; then
  CUDA_VERSION=$("$NVCC" --version 2>/dev/null | sed -n 's/.*release \([0-9][0-9]*\.[0-9][0-9]*\).*/\1/p' | head -n 1)
fi

# ---------------------------------------------------------------- TensorRT headers
# Reads NV_TENSORRT_MAJOR/MINOR/PATCH from NvInferVersion.h; 10.16+ define them through
# TRT_*_ENTERPRISE macros, so one level of indirection is resolved.
trt_header_version() {
  awk '
    $1 == "#define" { def[$2] = $3 }
    END {
      n = split("NV_TENSORRT_MAJOR NV_TENSORRT_MINOR NV_TENSORRT_PATCH", k, " ")
      out = ""
      for (i = 1; i <= n; i++) {
        v = def[k[i]]
        if (v !~ /^[0-9]+$/ && (v in def)) v = def[v]
        if (v !~ /^[0-9]+$/) { exit 1 }
        out = out (i > 1 ? "." : "") v
      }
      print out
    }' "$1"
}

trt_candidates=()
[[ -n $TRT_INCLUDE ]] && trt_candidates+=("$TRT_INCLUDE")
[[ -n $TRT_ROOT ]] && trt_candidates+=("$TRT_ROOT/include")
if [[ -z $TRT_INCLUDE && -z $TRT_ROOT ]]; then
  trt_candidates+=(/usr/include/aarch64-linux-gnu /usr/include/x86_64-linux-gnu /usr/include
    /usr/local/tensorrt/include /opt/tensorrt/include)
fi
TRT_HEADER_DIR=""
TRT_VERSION=""
for d in "${trt_candidates[@]}"; do
  if [[ -f $d/NvInferVersion.h && -f $d/NvInfer.h ]]; then
    TRT_HEADER_DIR=$d
    TRT_VERSION=$(trt_header_version "$d/NvInferVersion.h" || true)
    break
  fi
done
TRT_PACKAGE=""
if command -v dpkg-query >/dev/null 2>&1; then
  for p in libnvinfer-dev libnvinfer10 libnvinfer8; do
    v=$(dpkg-query -W -f='${Version}' "$p" 2>/dev/null || true)
    if [[ -n $v ]]; then TRT_PACKAGE="$p $v"; break; fi
  done
fi

# ---------------------------------------------------------------- GPU architecture
ARCH_SOURCE="--arch"
if [[ -z $ARCH ]]; then
  case $TEGRA_CHIP in
    tegra210) ARCH=53; ARCH_SOURCE="device tree (tegra210: Nano/TX1)" ;;
    tegra186) ARCH=62; ARCH_SOURCE="device tree (tegra186: TX2)" ;;
    tegra194) ARCH=72; ARCH_SOURCE="device tree (tegra194: Xavier)" ;;
    tegra234) ARCH=87; ARCH_SOURCE="device tree (tegra234: Orin)" ;;
    tegra264)
      # Thor: sm_101 up to CUDA 12.9, renamed sm_110 in CUDA 13
      if [[ -n $CUDA_VERSION ]] && version_ge "$CUDA_VERSION" 13.0; then ARCH=110; else ARCH=101; fi
      ARCH_SOURCE="device tree (tegra264: Thor)" ;;
    *)
      if command -v nvidia-smi >/dev/null 2>&1; then
        cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n 1 | tr -d ' \r' || true)
        if [[ $cc =~ ^[0-9]+\.[0-9]+$ ]]; then
          ARCH=${cc/./}; ARCH_SOURCE="nvidia-smi compute_cap $cc"
        fi
      fi ;;
  esac
fi
[[ -z $ARCH || $ARCH =~ ^[0-9]+$ ]] || die "--arch must be digits like 53 or 87, got '$ARCH'"

print_env() {
  echo "trt-sparse build environment"
  echo "  L4T:        ${L4T_VERSION:-not a Jetson (no $NV_TEGRA_RELEASE_FILE)}"
  echo "  JetPack:    ${JETPACK_VERSION:-unknown}${JETPACK_SOURCE:+ ($JETPACK_SOURCE)}"
  echo "  Tegra chip: ${TEGRA_CHIP:-none}"
  echo "  TensorRT:   ${TRT_VERSION:-not found}${TRT_HEADER_DIR:+ (headers: $TRT_HEADER_DIR)}${TRT_PACKAGE:+ [dpkg: $TRT_PACKAGE]}"
  echo "  CUDA:       ${CUDA_VERSION:-not found}${NVCC:+ (nvcc: $NVCC)}"
  echo "  CMake:      ${CMAKE_VERSION:-not found}${CMAKE_BIN:+ ($CMAKE_BIN)}"
  if [[ -n $ARCH ]]; then
    echo "  GPU arch:   sm_$ARCH (from $ARCH_SOURCE)"
  else
    echo "  GPU arch:   unknown"
  fi
}

if ((DETECT_ONLY)); then
  print_env
  exit 0
fi

# ---------------------------------------------------------------- prerequisites
[[ -n $CMAKE_BIN ]] || die "cmake not found on PATH; install it (Jetson/Ubuntu: sudo apt-get install cmake)"
[[ -n $CMAKE_VERSION ]] || die "cannot read the version of $CMAKE_BIN"
version_ge "$CMAKE_VERSION" 3.10 || die "CMake $CMAKE_VERSION is too old; 3.10 or newer is needed"
[[ -n $NVCC ]] || die "nvcc not found (looked in \$CUDA_HOME/bin, PATH, /usr/local/cuda/bin); install the CUDA toolkit (JetPack: sudo apt-get install nvidia-jetpack or cuda-toolkit-X-Y) or pass --cuda-root"
[[ -n $CUDA_VERSION ]] || die "cannot read the CUDA version from '$NVCC --version'"
if [[ -z $TRT_HEADER_DIR ]]; then
  die "TensorRT headers (NvInfer.h, NvInferVersion.h) not found in: ${trt_candidates[*]}; install them (Jetson: sudo apt-get install libnvinfer-dev, or nvidia-jetpack; x86: the TensorRT deb/tar) or pass --tensorrt-root / --tensorrt-include"
fi
[[ -n $TRT_VERSION ]] || die "cannot read the TensorRT version from $TRT_HEADER_DIR/NvInferVersion.h"
[[ -n $ARCH ]] || die "cannot detect the GPU architecture (no Jetson device tree, no nvidia-smi); pass --arch, e.g. --arch 53 for a Jetson Nano"
[[ -d $SOURCE_DIR && -f $SOURCE_DIR/CMakeLists.txt ]] || die "no CMakeLists.txt in $SOURCE_DIR (copy the repository's plugin/ folder here, or pass --source)"

# CUDA 13 dropped sm_50..sm_72 (Nano, TX2, Xavier); CUDA 12 dropped sm_35/37.
if version_ge "$CUDA_VERSION" 13.0 && ((ARCH < 75)); then
  die "CUDA $CUDA_VERSION cannot compile for sm_$ARCH (CUDA 13 supports sm_75 and newer); use the CUDA that JetPack ships (10.2 on JetPack 4.6) or CUDA 12.x"
fi
if "$NVCC" --list-gpu-code >/dev/null 2>&1; then
  if ! "$NVCC" --list-gpu-code 2>/dev/null | grep -qx "sm_$ARCH"; then
    die "nvcc $CUDA_VERSION cannot generate code for sm_$ARCH ('$NVCC --list-gpu-code' lists: $("$NVCC" --list-gpu-code 2>/dev/null | tr '\n' ' '))"
  fi
fi
case ${TRT_VERSION%%.*} in
  7) die "TensorRT $TRT_VERSION is too old: the plugin needs TensorRT 8.0 or newer (JetPack >= 4.6)" ;;
  8|10) ;;
  *) note "warning: TensorRT $TRT_VERSION has not been tried with this kit (tested layouts: 8.x, 10.x)" ;;
esac

if [[ -z $JOBS ]]; then
  JOBS=$(nproc 2>/dev/null || echo 2)
  mem_kb=$(awk '/^MemTotal:/ {print $2}' /proc/meminfo 2>/dev/null || echo 0)
  if [[ -n $mem_kb ]] && ((mem_kb > 0 && mem_kb < 5 * 1024 * 1024 && JOBS > 2)); then
    JOBS=2   # nvcc needs ~1 GiB per job; a 4 GB Nano swaps or gets OOM-killed with -j4
  fi
fi
[[ $JOBS =~ ^[1-9][0-9]*$ ]] || die "--jobs must be a positive integer, got '$JOBS'"

# ---------------------------------------------------------------- configure + build
cmake_args=(
  "-DCMAKE_BUILD_TYPE=$BUILD_TYPE"
  "-DCMAKE_CUDA_COMPILER=$NVCC"
  # plugin/kernels/CMakeLists.txt: TSC_CUDA_ARCHS picks the architectures on every CMake
  # (CMake < 3.18 ignores CMAKE_CUDA_ARCHITECTURES; the kernels then add -gencode flags).
  "-DTSC_CUDA_ARCHS=$ARCH"
  "-DTENSORRT_INCLUDE_DIR=$TRT_HEADER_DIR"
)
[[ -n $TRT_ROOT ]] && cmake_args+=("-DTENSORRT_ROOT=$TRT_ROOT")
if version_ge "$CMAKE_VERSION" 3.18; then
  cmake_args+=("-DCMAKE_CUDA_ARCHITECTURES=$ARCH")
fi

print_env
SRC_ABS=$(cd "$SOURCE_DIR" && pwd)
if ((DRY_RUN)); then
  ((CLEAN)) && echo "rm -rf $BUILD_DIR"
  printf 'mkdir -p %q && cd %q && %q %q' "$BUILD_DIR" "$BUILD_DIR" "$CMAKE_BIN" "$SRC_ABS"
  printf ' %q' "${cmake_args[@]}"
  printf '\n%q --build %q -- -j%s\n' "$CMAKE_BIN" "$BUILD_DIR" "$JOBS"
  exit 0
fi

if ((CLEAN)); then
  rm -rf "$BUILD_DIR"
fi
mkdir -p "$BUILD_DIR"
# "cmake -S/-B" needs CMake 3.13; configure from inside the build folder instead.
(cd "$BUILD_DIR" && "$CMAKE_BIN" "$SRC_ABS" "${cmake_args[@]}") || die "CMake configuration failed (see the messages above; $BUILD_DIR/CMakeFiles/CMakeError.log has details)"
"$CMAKE_BIN" --build "$BUILD_DIR" -- "-j$JOBS" || die "build failed (see the compiler messages above)"

PLUGIN_LIB=$(find "$BUILD_DIR" -name 'libtrt_sparse_plugin.so' -type f 2>/dev/null | head -n 1)
if [[ -z $PLUGIN_LIB ]]; then
  die "the build finished but produced no libtrt_sparse_plugin.so in $BUILD_DIR (did CMake find the TensorRT headers? grep -i tensorrt $BUILD_DIR/CMakeCache.txt)"
fi
PLUGIN_LIB=$(cd "$(dirname "$PLUGIN_LIB")" && pwd)/$(basename "$PLUGIN_LIB")

# Record what was built with, for the benchmark summary.
{
  echo "l4t=$L4T_VERSION"
  echo "jetpack=$JETPACK_VERSION"
  echo "tegra_chip=$TEGRA_CHIP"
  echo "tensorrt=$TRT_VERSION"
  echo "cuda=$CUDA_VERSION"
  echo "cmake=$CMAKE_VERSION"
  echo "arch=sm_$ARCH"
  echo "plugin=$PLUGIN_LIB"
} >"$BUILD_DIR/jetson_env.txt.tmp" && mv -f "$BUILD_DIR/jetson_env.txt.tmp" "$BUILD_DIR/jetson_env.txt"

echo
echo "built: $PLUGIN_LIB"
echo "next:  jetson/build_engines.sh --dense MODEL.onnx --sparse MODEL_sparse.onnx --plugin $PLUGIN_LIB"
