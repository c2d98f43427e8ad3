#!/usr/bin/env bash
# Acceptance of `trt-sparse convert` (issue 3) on exporter output, end to end:
#   export ResNet-18, ResNet-50, VGG-16, MobileNetV2 and ResNet-18 with BatchNorm nodes kept
#   (tools/export_models.py, random weights, dynamic batch), prune each to 90% with
#   `trt-sparse prune --sparsity 0.9`, convert + verify (exact weights), time each convert with
#   /usr/bin/time, and check: verification passed, max relative error < 1e-5, the expected
#   number of layers converted, ResNet-50 convert (verification included) < 60 s.
#
# Usage: bash tools/acceptance_convert.sh [WORKDIR]     (default /tmp/trt-sparse-acceptance)
# Needs: torch (pip install torch==2.13.0, CPU build), onnxruntime; about 1.5 GB of disk.
# Writes WORKDIR/summary.json and prints a table; exit status 1 if a check fails.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
WORK="${1:-/tmp/trt-sparse-acceptance}"
mkdir -p "$WORK"
export PYTHONPATH="$HERE${PYTHONPATH:+:$PYTHONPATH}"
TS="python3 -m trt_sparse"
TIME=/usr/bin/time
[ -x "$TIME" ] || { echo "acceptance: /usr/bin/time is missing (apt-get install time)" >&2; exit 2; }

MODELS="resnet18 resnet50 vgg16 mobilenetv2 resnet18_bn"
for m in $MODELS; do
  [ -f "$WORK/$m.onnx" ] || python3 "$HERE/tools/export_models.py" --model "$m" -o "$WORK"
  $TS prune "$WORK/$m.onnx" -o "$WORK/$m.p90.onnx" --sparsity 0.9 -q
  echo "== convert $m"
  $TIME -f "%e %M" -o "$WORK/$m.time" \
    $TS convert "$WORK/$m.p90.onnx" -o "$WORK/$m.sparse.onnx" --report "$WORK/$m.report.json" -q
  $TS verify "$WORK/$m.p90.onnx" "$WORK/$m.sparse.onnx" --batch 2 | tail -1
done

python3 - "$WORK" $MODELS <<'EOF'
import json, os, sys
work, models = sys.argv[1], sys.argv[2:]
# group-1 convs of each architecture: all of them convert at 90% sparsity (depthwise ones stay dense)
expected = {"resnet18": 20, "resnet50": 53, "vgg16": 13, "mobilenetv2": 35, "resnet18_bn": 20}
rows, ok = [], True
for m in models:
    rep = json.load(open(os.path.join(work, m + ".report.json")))
    wall, rss = open(os.path.join(work, m + ".time")).read().split()
    v = rep["verification"]
    row = {"model": m, "conv_layers": rep["totals"]["conv_layers"], "converted": rep["totals"]["converted"],
           "expected": expected[m], "max_rel": v["max_rel"], "verified": v["passed"],
           "convert_wall_s": float(wall), "max_rss_mb": int(rss) / 1024.0,
           "bn_folded": sum("BatchNormalization" in l["fused"] for l in rep["layers"]),
           "weight_bytes": [rep["totals"]["weight_bytes_before"], rep["totals"]["weight_bytes_after"]]}
    row["pass"] = bool(v["passed"] and v["max_rel"] < 1e-5 and row["converted"] == expected[m]
                       and (m != "resnet50" or row["convert_wall_s"] < 60))
    ok &= row["pass"]
    rows.append(row)
print("{:<12} {:>5} {:>9} {:>8} {:>10} {:>9} {:>9} {:>8}  {}".format(
    "model", "convs", "converted", "expected", "max_rel", "bn_fold", "wall_s", "rss_MB", "result"))
for r in rows:
    print("{model:<12} {conv_layers:>5} {converted:>9} {expected:>8} {max_rel:>10.3g} {bn_folded:>9} "
          "{convert_wall_s:>9.1f} {max_rss_mb:>8.0f}  {res}".format(res="PASS" if r["pass"] else "FAIL", **r))
json.dump({"models": rows, "passed": ok}, open(os.path.join(work, "summary.json"), "w"), indent=2)
print("acceptance", "PASSED" if ok else "FAILED", "->", os.path.join(work, "summary.json"))
sys.exit(0 if ok else 1)
EOF
