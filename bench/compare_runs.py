"""Compare the sparse kernel times of two bench-kernels JSON files (same seeded weights, different kernels).

    python3 bench/compare_runs.py OLD.json NEW.json [--per-case]

Prints, per (dtype, batch, sparsity), the geometric mean / min / max of old time / new time over the
cases present in both files (a ratio > 1 means NEW is faster), and with --per-case every case. Dense
baselines are not compared: cuDNN's choice varies between processes, the sparse time of a seeded case
does not (within ~3%).
"""
import argparse
import json
import math
from collections import defaultdict


def case_key(r):
    """Identity of a benchmark case across runs."""
    return (r["layer"]["name"], r["batch"], r["sparsity"], r["dtype"], r.get("pattern", "unstructured"),
            bool(r.get("allow_tf32", False)))


def load_cases(path):
    """Map case_key -> result row of a bench-kernels JSON file."""
    with open(path) as f:
        data = json.load(f)
    return {case_key(r): r for r in data["results"]}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--per-case", action="store_true", help="print every case")
    a = ap.parse_args(argv)
    old, new = load_cases(a.old), load_cases(a.new)
    groups = defaultdict(list)
    rows = []
    for k in sorted(set(old) & set(new)):
        ratio = old[k]["sparse_us"] / new[k]["sparse_us"]
        groups[(k[3], k[1], k[2])].append(ratio)
        rows.append((k, old[k], new[k], ratio))
    print("| dtype | N | sparsity | cases | geomean old/new | min | max |")
    print("|---|---|---|---|---|---|---|")
    for (dt, n, sp), rs in sorted(groups.items()):
        g = math.exp(sum(math.log(x) for x in rs) / len(rs))
        print("| {} | {} | {:g} | {} | {:.2f}x | {:.2f}x | {:.2f}x |".format(dt, n, sp, len(rs), g, min(rs), max(rs)))
    if a.per_case:
        print()
        print("| layer | N | sparsity | dtype | old us (variant) | new us (variant) | old/new |")
        print("|---|---|---|---|---|---|---|")
        for k, o, n_, ratio in rows:
            print("| {} | {} | {:g} | {} | {:.1f} ({}) | {:.1f} ({}) | {:.2f}x |".format(
                k[0], k[1], k[2], k[3], o["sparse_us"], o["sparse_variant"], n_["sparse_us"], n_["sparse_variant"],
                ratio))


if __name__ == "__main__":
    main()
