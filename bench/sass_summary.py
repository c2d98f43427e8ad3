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


def _load(path):
    """(kernel name, header, column index by name, instruction rows) of an ncu SASS source CSV."""
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    kernel = rows[0][1] if rows and len(rows[0]) > 1 else "?"
    header = rows[1]
    col = {name: i for i, name in enumerate(header)}
    return kernel, header, col, [r for r in rows[2:] if len(r) == len(header)]


def _opcode(source):
    """Base opcode of a SASS line ('@P0 LDG.E.64 ...' -> 'LDG')."""
    words = source.split()
    if words and words[0].startswith("@"):
        words = words[1:]
    return words[0].split(".")[0] if words else "?"


def summarize(path, hot, title):
    """Return the summary text of one SASS CSV."""
    kernel, header, col, body = _load(path)
    stall_cols = [n for n in header if n.startswith("stall_") and "(Not Issued)" not in n]
    stalls = collections.Counter()
    opcodes = collections.Counter()
    wave, ideal = 0, 0
    for r in body:
        for n in stall_cols:
            stalls[n] += _num(r[col[n]])
        opcodes[_opcode(r[col["Source"]])] += _num(r[col["Instructions Executed"]])
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


#: opcodes named in a region's line (memory, synchronization, tensor-core)
REGION_OPS = ("HMMA", "LDSM", "LDS", "LDG", "LDGSTS", "STS", "STG", "BAR", "MEMBAR", "SYNCS", "UTMALDG", "SHFL",
              "ATOMS", "RED")


def regions(path, min_share):
    """Return the program split into runs of consecutive instructions executed equally often (straight-line
    code: set-up, staging loop, k-step loop, epilogue), each with its share of the executed warp instructions and
    of the stall samples and its memory / sync / tensor-core opcodes; runs below `min_share` of both are left
    out."""
    _, _, col, body = _load(path)
    runs = []
    for r in body:
        n = _num(r[col["Instructions Executed"]])
        w = _num(r[col["Warp Stall Sampling (All Samples)"]])
        op = _opcode(r[col["Source"]])
        if runs and runs[-1]["executed"] == n:
            runs[-1]["length"] += 1
            runs[-1]["samples"] += w
            runs[-1]["ops"][op] += 1
        else:
            runs.append({"first": r[col["Address"]], "executed": n, "length": 1, "samples": w,
                         "ops": collections.Counter({op: 1})})
    total = sum(x["executed"] * x["length"] for x in runs) or 1
    samples = sum(x["samples"] for x in runs) or 1
    out = ["straight-line runs (executed x length): share of warp instructions, share of stall samples, opcodes"]
    for x in runs:
        si, ss = x["executed"] * x["length"] / total, x["samples"] / samples
        if si < min_share and ss < min_share:
            continue
        ops = ", ".join("%s %d" % (o, x["ops"][o]) for o in REGION_OPS if x["ops"][o])
        out.append("%s  %7d x %4d  %5.1f%% instr  %5.1f%% samples  %s" % (x["first"], x["executed"], x["length"],
                                                                        100 * si, 100 * ss, ops))
    return "\n".join(out) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv")
    ap.add_argument("--hot", type=int, default=20000, help="list instructions executed at least this often")
    ap.add_argument("--title", default="", help="first line of the summary")
    ap.add_argument("--regions", type=float, metavar="SHARE",
                    help="instead: the straight-line runs with at least this share of the instructions or samples")
    a = ap.parse_args(argv)
    sys.stdout.write(regions(a.csv, a.regions) if a.regions is not None else summarize(a.csv, a.hot, a.title))


if __name__ == "__main__":
    main()
