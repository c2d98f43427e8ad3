#!/usr/bin/env python3
"""Summarize an Nsight Compute SASS source page (``ncu --page source --csv --print-source sass``).

Prints the kernel name, stall-sample shares, warp instructions executed by opcode, shared-memory
wavefronts (actual vs ideal) and the hottest instructions, as in bench/results/ncu/*_sass_summary_*.txt.

    python3 bench/sass_summary.py sass_LAYER.csv [--hot 20000] [--title TEXT]
"""
import argparse
import collections
import csv
import sys


def _num(text):
    """Integer value of an ncu CSV cell ('-' and '' count as 0)."""
    try:
        return int(float(text.replace(",", "")))
    except ValueError:
        return 0


def summarize(path, hot, title):
    """Return the summary text of one SASS CSV."""
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    kernel = rows[0][1] if rows and len(rows[0]) > 1 else "?"
    header = rows[1]
    col = {name: i for i, name in enumerate(header)}
    body = [r for r in rows[2:] if len(r) == len(header)]
    stall_cols = [n for n in header if n.startswith("stall_") and "(Not Issued)" not in n]
    stalls = collections.Counter()
    opcodes = collections.Counter()
    wave, ideal = 0, 0
    for r in body:
        for n in stall_cols:
            stalls[n] += _num(r[col[n]])
        src = r[col["Source"]].strip()
        op = src.split()[0] if src else "?"
        if op.startswith("@"):
            op = src.split()[1] if len(src.split()) > 1 else "?"
        opcodes[op.split(".")[0]] += _num(r[col["Instructions Executed"]])
        wave += _num(r[col["L1 Wavefronts Shared"]])
        ideal += _num(r[col["L1 Wavefronts Shared Ideal"]])
    total = sum(stalls.values()) or 1
    executed = sum(opcodes.values())
    out = []
    if title:
        out.append(title)
    out.append(kernel)
    out.append("stall samples: %d; shares: %s" % (total, ", ".join(
        "%s %.1f%%" % (n, 100.0 * v / total) for n, v in stalls.most_common(8) if v)))
    out.append("warp instructions executed: %d" % executed)
    out.append("by opcode: " + ", ".join("%s %d" % kv for kv in opcodes.most_common(14)))
    out.append("shared-memory wavefronts: %d (ideal %d)" % (wave, ideal))
    out.append("")
    out.append("hot loop (instructions executed >= %d per kernel):" % hot)
    for r in body:
        n = _num(r[col["Instructions Executed"]])
        if n >= hot:
            out.append("%8d  %s" % (n, r[col["Source"]].strip()))
    return "\n".join(out) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv")
    ap.add_argument("--hot", type=int, default=20000, help="list instructions executed at least this often")
    ap.add_argument("--title", default="", help="first line of the summary")
    a = ap.parse_args(argv)
    sys.stdout.write(summarize(a.csv, a.hot, a.title))


if __name__ == "__main__":
    main()
