#!/bin/bash
# Compile the SparseConv2d TensorRT plugin warning-free (-Wall -Wextra -Werror) against
# every TensorRT header set under .trt/<version>/include (get them with
# ../shared/tools/trt-headers GITDIR; never commit them), then link it into a shared
# library with the CPU stand-in of the kernel ABI (tests/cpp/tsc_cpu_stub.cpp) and check
# what it exports / needs:
#   TensorRT >= 10: IPluginV3 path, C++14 and C++17, linked with -Wl,--no-undefined
#                   (nothing from libnvinfer / libtensorrt_rtx), exports getCreators +
#                   setLoggerFinder.
#   TensorRT 8.x:   IPluginV2DynamicExt path, C++14 (gcc 7 / JetPack 4.6) and C++17; the
#                   only unresolved TensorRT symbol may be getPluginRegistry (libnvinfer).
# usage: tools/check_plugin_build.sh [VERSION ...]   (default: every .trt/*/include)
# env:   CXX (default g++), CUDA_INCLUDE (default: from nvcc, else /usr/local/cuda/include)
# Prints one line per version and standard, then "SUMMARY ..."; exit 0 only if all pass,
# 3 if no header set is present.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
cxx=${CXX:-g++}
if [[ -z ${CUDA_INCLUDE:-} ]]; then
  cands=()
  [[ -n ${CUDA_HOME:-} ]] && cands+=("$CUDA_HOME/include")
  [[ -n ${CUDA_PATH:-} ]] && cands+=("$CUDA_PATH/include")
  command -v nvcc >/dev/null 2>&1 && cands+=("$(dirname "$(dirname "$(command -v nvcc)")")/include")
  cands+=(/usr/local/cuda/include /usr/include)
  CUDA_INCLUDE=${cands[0]}
  for c in "${cands[@]}"; do
    if [[ -f $c/cuda_runtime_api.h ]]; then CUDA_INCLUDE=$c; break; fi
  done
fi
if [[ ! -f $CUDA_INCLUDE/cuda_runtime_api.h ]]; then
  echo "check_plugin_build: no cuda_runtime_api.h under $CUDA_INCLUDE (TensorRT headers include it); set CUDA_INCLUDE" >&2
  exit 3
fi
versions=("$@")
if ((${#versions[@]} == 0)); then
  for d in "$root"/.trt/*/include; do
    [[ -f $d/NvInferRuntime.h ]] && versions+=("$(basename "$(dirname "$d")")")
  done
fi
if ((${#versions[@]} == 0)); then
  echo "check_plugin_build: no TensorRT headers under $root/.trt (run ../shared/tools/trt-headers GITDIR)" >&2
  exit 3
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
srcs=(SparseConv2dCore.cpp SparseConv2dFields.cpp SparseConv2dBlob.cpp SparseConv2dPlan.cpp SparseConv2dPluginV3.cpp SparseConv2dPluginV2.cpp PluginRegistration.cpp)
check_version() { # VERSION -> lines "<ver>/<std>: OK|..." on stdout
  local v=$1 inc=$root/.trt/$1/include major=${1%%.*} std tag out flags ok log lib s exports undef detail
  if [[ ! -f $inc/NvInferRuntime.h ]]; then
    echo "$v: MISSING (no $inc/NvInferRuntime.h)"; return
  fi
  for std in c++14 c++17; do
    tag="$v/$std"
    out=$work/$v-$std; mkdir -p "$out"
    flags=(-std=$std -Wall -Wextra -Werror -O1 -fPIC -fvisibility=hidden -I"$root/plugin" -isystem "$inc" -isystem "$CUDA_INCLUDE")
    ok=1; log=$out/log.txt; : >"$log"
    for s in "${srcs[@]}"; do
      "$cxx" "${flags[@]}" -c "$root/plugin/$s" -o "$out/${s%.cpp}.o" >>"$log" 2>&1 || ok=0
    done
    "$cxx" "${flags[@]}" -c "$root/tests/cpp/tsc_cpu_stub.cpp" -o "$out/stub.o" >>"$log" 2>&1 || ok=0
    if ((ok == 0)); then
      echo "$tag: COMPILE FAILED"; sed 's/^/    /' "$log" | head -40; continue
    fi
    lib=$out/libtrt_sparse_plugin.so
    if ((major >= 10)); then
      if ! "$cxx" -shared -o "$lib" "$out"/*.o -Wl,--no-undefined >>"$log" 2>&1; then
        echo "$tag: LINK FAILED with --no-undefined"; sed 's/^/    /' "$log" | head -20; continue
      fi
      exports=$(nm -D --defined-only "$lib" | awk '{print $NF}' | grep -E '^(getCreators|setLoggerFinder)$' | sort | tr '\n' ' ')
      if [[ $exports != "getCreators setLoggerFinder " ]]; then
        echo "$tag: EXPORTS WRONG (found: ${exports:-none})"; continue
      fi
      detail="IPluginV3; exports getCreators+setLoggerFinder; links with --no-undefined (no libnvinfer)"
    else
      if ! "$cxx" -shared -o "$lib" "$out"/*.o >>"$log" 2>&1; then
        echo "$tag: LINK FAILED"; sed 's/^/    /' "$log" | head -20; continue
      fi
      # strong undefined symbols without a version tag = not from libc/libstdc++/libgcc
      undef=$(nm -D "$lib" | awk '$1=="U" && $2 !~ /@/ {print $2}' | tr '\n' ' ')
      if [[ $undef != "getPluginRegistry " ]]; then
        echo "$tag: UNEXPECTED UNDEFINED SYMBOLS: ${undef:-none}"; continue
      fi
      detail="IPluginV2DynamicExt + REGISTER_TENSORRT_PLUGIN; only getPluginRegistry (libnvinfer) unresolved"
    fi
    echo "$tag: OK ($detail)"
  done
}
jobs_max=$(nproc 2>/dev/null || echo 2)
for v in "${versions[@]}"; do
  while (($(jobs -rp | wc -l) >= jobs_max)); do wait -n; done
  check_version "$v" >"$work/$v.result" &
done
wait
pass=(); failed=()
for v in "${versions[@]}"; do
  cat "$work/$v.result"
  while IFS= read -r line; do
    case $line in
      *": OK "*) pass+=("${line%%:*}") ;;
      [0-9]*": "*) failed+=("${line%%:*}") ;;
    esac
  done <"$work/$v.result"
done
echo "SUMMARY compiled+linked: ${pass[*]:-none}; failed: ${failed[*]:-none}"
((${#failed[@]} == 0))
