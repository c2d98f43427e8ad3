#!/bin/bash
# Device run of the SparseConv2d plugin (one `run` call; carry .trt/11.1 or .trt/10.16):
# builds the kernels + plugin with CMake for this GPU, builds the GPU driver, runs it
# (two seeds), runs it once under compute-sanitizer memcheck (leak check), and runs the
# pytest GPU test. Everything lands in $OUT (default ./out-device).
#   bash tests/cpp/run_device.sh
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 2
OUT=${OUT:-$root/out-device}
mkdir -p "$OUT"
inc=""
for v in 11.1 10.16 10.3; do
  [[ -f .trt/$v/include/NvInferRuntime.h ]] && { inc=$root/.trt/$v/include; break; }
done
[[ -n $inc ]] || { echo "no TensorRT >= 10 headers under .trt/ (carry .trt/11.1)" | tee "$OUT/summary.txt"; exit 2; }
arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d '. ')
cuda=""
for c in "${CUDA_HOME:-}" "$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")" /usr/local/cuda /usr/local/cuda-*; do
  [[ -n $c && -f $c/include/cuda_runtime_api.h ]] && { cuda=$c; break; }
done
[[ -n $cuda ]] || { echo "no CUDA toolkit found" | tee "$OUT/summary.txt"; exit 2; }
[[ -n $arch ]] || { echo "no GPU (nvidia-smi)" | tee "$OUT/summary.txt"; exit 2; }
{
  echo "date: $(date -u +%FT%TZ)"; echo "commit: $(git rev-parse HEAD 2>/dev/null || echo unknown)"
  nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader
  nvcc --version | tail -2; cmake --version | head -1; g++ --version | head -1
  echo "TensorRT headers: $inc"
} >"$OUT/env.txt" 2>&1
b=$root/build-device
t0=$(date +%s)
cmake -S plugin -B "$b" -DTENSORRT_INCLUDE_DIR="$inc" -DCMAKE_CUDA_ARCHITECTURES="$arch" >"$OUT/build.txt" 2>&1 &&
  cmake --build "$b" -j"$(nproc)" >>"$OUT/build.txt" 2>&1
rc_build=$?
echo "build rc=$rc_build in $(( $(date +%s) - t0 )) s" | tee -a "$OUT/summary.txt"
((rc_build == 0)) || { tail -40 "$OUT/build.txt"; exit 1; }
lib=$b/libtrt_sparse_plugin.so
g++ -std=c++14 -O1 -Wall -Wextra -Werror -DDRIVER_GPU -Itests/cpp -isystem "$inc" -isystem "$cuda/include" \
  tests/cpp/plugin_driver.cpp -L"$cuda/lib64" -Wl,-rpath,"$cuda/lib64" -lcudart -ldl -o "$b/plugin_driver_gpu" \
  >>"$OUT/build.txt" 2>&1 || { echo "driver build failed" | tee -a "$OUT/summary.txt"; tail -30 "$OUT/build.txt"; exit 1; }
ldd "$lib" >>"$OUT/env.txt"
"$b/plugin_driver_gpu" "$lib" --seed 11 >"$OUT/driver_seed11.txt" 2>&1
echo "driver seed 11 rc=$? $(grep SUMMARY "$OUT/driver_seed11.txt")" | tee -a "$OUT/summary.txt"
TRT_SPARSE_PLUGIN_LIB=$lib PYTHONUNBUFFERED=1 timeout 120 python3 -m pytest -q tests/test_plugin.py -m gpu -rs \
  -p no:cacheprovider >"$OUT/pytest_gpu.txt" 2>&1
echo "pytest -m gpu rc=$? $(tail -1 "$OUT/pytest_gpu.txt")" | tee -a "$OUT/summary.txt"
if command -v compute-sanitizer >/dev/null; then
  # build-time tuning off under memcheck (thousands of timed launches); tuning is memchecked by
  # tools/device_kernels.sh sanitize-quick
  TRT_SPARSE_NO_TUNE=1 timeout "${MEMCHECK_S:-120}" compute-sanitizer --tool memcheck --leak-check full --error-exitcode 9 \
    "$b/plugin_driver_gpu" "$lib" --seed 13 >"$OUT/memcheck.txt" 2>&1
  echo "memcheck rc=$? $(grep -E 'ERROR SUMMARY|SUMMARY checks' "$OUT/memcheck.txt" | tr '\n' ' ')" | tee -a "$OUT/summary.txt"
fi
grep -h "^CASE" "$OUT/driver_seed11.txt" | head -40
