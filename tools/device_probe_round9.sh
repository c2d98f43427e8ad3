set -u
OUT=${OUT:-$PWD/device_out}; mkdir -p $OUT
export TRT_SPARSE_COMMIT=c5da696
bash tools/device_kernels.sh build 2>&1 | tail -3
TRT_SPARSE_TMA_FP16=1 timeout 60 python3 -m pytest -q -m gpu tests/test_kernels_gpu.py -k "tma_staging" > $OUT/probe_fp16.log 2>&1
rc=$?; echo "fp16 TMA probe rc=$rc"; tail -3 $OUT/probe_fp16.log
if [ $rc -eq 0 ]; then export TRT_SPARSE_TMA_FP16=1; echo "fp16 TMA on for the rest"; fi
echo "TRT_SPARSE_TMA_FP16=${TRT_SPARSE_TMA_FP16:-unset}" > $OUT/probe_env.txt
DEADLINE=420 bash tools/device_kernels.sh test sanitize-quick bench-full 2>&1 | grep -v "^fp\|^ *$" | tail -12
