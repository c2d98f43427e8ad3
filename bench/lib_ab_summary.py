#!/usr/bin/env python3
"""Summarize an A/B of two kernel libraries timed in separate processes by `bench/variant_times.py --json`.

    python3 bench/lib_ab_summary.py A1.json B1.json [A2.json B2.json] [--family smem] [--json OUT.json]

Where a switch is compile-time (e.g. launch bounds), A and B cannot share a process; the runs alternate A, B, A, B
and the A1 / A2 (and B1 / B2) ratios show how much of a difference the process alone makes. Per case it compares the
best variant of `--family` and the best variant overall (what the tuner would pick); ratios are A time / B time
(> 1: B faster), geometric means over the cases present in both files.
"""
import argparse
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from variant_rows import case_key  # noqa: E402


def best_times(rows, family):
    """{case key: (best time of `family` or None, best time of any variant)} of a variant_times JSON."""
    out = {}
    for r in rows:
        fam = r["best_per_family"].get(family)
        out[case_key(r)] = (fam[1] if fam else None, min(r["times_us"].values()))
    return out


def geomean_ratio(a, b, which):
    """(geometric mean of a / b, number of cases) over the cases both have; which = 0 (family) or 1 (overall)."""
    logs = [math.log(a[k][which] / b[k][which]) for k in a
            if k in b and a[k][which] and b[k][which]]
    return (math.exp(sum(logs) / len(logs)) if logs else float("nan")), len(logs)


def summarize(paths, family):
    """Ratios between consecutive A / B runs and between the repeats of each side."""
    runs = []
    for p in paths:
        with open(p) as f:
            runs.append(best_times(json.load(f), family))
    names = ["A1", "B1", "A2", "B2"][:len(runs)]
    pairs = [(0, 1)] + ([(2, 3), (0, 2), (1, 3)] if len(runs) == 4 else [])
    out = []
    for i, j in pairs:
        fam, n = geomean_ratio(runs[i], runs[j], 0)
        tot, _ = geomean_ratio(runs[i], runs[j], 1)
        out.append({"a": names[i], "b": names[j], "cases": n, "family_ratio": fam, "overall_ratio": tot})
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", help="variant_times JSONs in the order A1 B1 [A2 B2]")
    ap.add_argument("--family", default="smem")
    ap.add_argument("--json", help="write the ratios here")
    a = ap.parse_args()
    if len(a.runs) not in (2, 4):
        ap.error("give 2 or 4 JSONs (A1 B1 [A2 B2])")
    present = [p for p in a.runs if os.path.exists(p)]
    if len(present) != len(a.runs):
        print("missing: " + " ".join(p for p in a.runs if p not in present), file=sys.stderr)
        present = present[:2] if len(present) >= 2 else []
        if not present:
            return 1
    rows = summarize(present, a.family)
    for r in rows:
        print("{a} / {b}: best {fam} x{family_ratio:.3f}, best overall x{overall_ratio:.3f} ({cases} cases)".format(
            fam=a.family, **r))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"family": a.family, "runs": present, "ratios": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
