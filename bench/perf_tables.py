"""Markdown tables of bench-kernels results for docs/PERFORMANCE.md.

    python3 bench/perf_tables.py bench/results/h200_full.json [bench/results/h200_sweep.json]
    python3 bench/perf_tables.py --budget bench/results/h200_full.json   (what issue 8's fp32 targets demand)
"""
import argparse
import json
import sys


def layer_table(results):
    """One row per (layer, batch, sparsity, dtype)."""
    out = ["| layer | N | sparsity | dtype | sparse us | variant | dense best us (baseline) | speedup vs best | "
           "vs fp32 TF32-off | floor us | floor/time |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in sorted(results, key=lambda r: (r["dtype"], r["batch"], r["layer"]["name"], r["sparsity"])):
        base = "fp16_best" if r["dtype"] == "fp16" else "tf32_best"
        notf = "{:.2f}x".format(r["speedup"]["fp32_notf32"]) if "fp32_notf32" in r["speedup"] else "-"
        out.append("| {} | {} | {:g} | {} | {:.1f} | {} | {:.1f} ({}) | {:.2f}x | {} | {:.2f} | {:.3f} |".format(
            r["layer"]["name"], r["batch"], r["sparsity"], r["dtype"], r["sparse_us"], r["sparse_variant"],
            r["dense_us"][base], base, r["speedup"][base], notf, r["floor_us"], r["roofline_fraction"]))
    return "\n".join(out)


def summary_table(summary):
    """Geometric means per (dtype, batch, sparsity, layer set)."""
    out = ["| dtype | N | sparsity | layers | geomean vs TF32 best | min vs TF32 best | geomean vs fp32 TF32-off | "
           "geomean vs fp16 best | min vs fp16 best | median time/floor |",
           "|---|---|---|---|---|---|---|---|---|---|"]

    def f(e, k):
        return "{:.2f}x".format(e[k]) if k in e else "-"
    for key, e in summary.items():
        dt, b, s, subset = key.split("|")
        out.append("| {} | {} | {} | {} ({}) | {} | {} | {} | {} | {} | {:.1f} |".format(
            dt, b[1:], s[1:], e["layers"], subset, f(e, "geomean_vs_tf32_best"), f(e, "min_vs_tf32_best"),
            f(e, "geomean_vs_fp32_notf32"), f(e, "geomean_vs_fp16_best"), f(e, "min_vs_fp16_best"),
            e["median_time_over_floor"]))
    return "\n".join(out)


#: issue 8's fp32 targets vs cuDNN TF32 best on the 3x3 stride-1 layers: (batch, sparsity) -> speedup
FP32_TARGETS = {(1, 0.9): 2.0, (1, 0.95): 3.0, (8, 0.95): 1.0}


def budget_table(results, fma_peak_tflops):
    """Per fp32 3x3 stride-1 case with a target: the time the target allows (TF32 best / target), the roofline
    floor, their ratio, the measured time over the floor, and the useful FMA rate the target needs (TFLOP/s and
    share of the measured fp32 FMA peak)."""
    out = ["| layer | N | sparsity | target | allowed us | floor us | allowed / floor | measured / floor | "
           "needed useful TFLOP/s | of FMA peak |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    rows = [r for r in results if r["dtype"] == "fp32" and not r.get("allow_tf32")
            and (r["batch"], r["sparsity"]) in FP32_TARGETS and r["layer"]["kernel"] == 3
            and r["layer"].get("stride", 1) == 1 and "tf32_best" in r["dense_us"]]
    for r in sorted(rows, key=lambda r: (r["batch"], r["sparsity"], r["layer"]["name"])):
        target = FP32_TARGETS[(r["batch"], r["sparsity"])]
        allowed = r["dense_us"]["tf32_best"] / target
        need = r["useful_gflop"] / allowed * 1e3
        out.append("| {} | {} | {:g} | {:g}x | {:.1f} | {:.2f} | {:.2f} | {:.1f} | {:.1f} | {:.0%} |".format(
            r["layer"]["name"], r["batch"], r["sparsity"], target, allowed, r["floor_us"], allowed / r["floor_us"],
            r["sparse_us"] / r["floor_us"], need, need / fma_peak_tflops))
    return "\n".join(out)


def main(argv):
    ap = argparse.ArgumentParser(prog="perf_tables.py", description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+", metavar="FILE.json")
    ap.add_argument("--budget", action="store_true",
                    help="print what the fp32 targets demand of each layer (time allowed vs roofline floor)")
    a = ap.parse_args(argv)
    for p in a.files:
        d = json.load(open(p))
        print("### {}\n".format(p))
        if a.budget:
            print(budget_table(d["results"], d["meta"]["fp32_fma_peak_tflops"]) + "\n")
            continue
        print(summary_table(d["summary"]) + "\n")
        print(layer_table(d["results"]) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
