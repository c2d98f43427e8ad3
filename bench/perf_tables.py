"""Markdown tables of bench-kernels results for docs/PERFORMANCE.md.

    python3 bench/perf_tables.py bench/results/h200_full.json [bench/results/h200_sweep.json]
"""
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


def main(paths):
    for p in paths:
        d = json.load(open(p))
        print("### {}\n".format(p))
        print(summary_table(d["summary"]) + "\n")
        print(layer_table(d["results"]) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
