"""Rows of `bench/variant_times.py --json` (torch-free helpers shared by the bench scripts)."""


def family(name):
    """Variant family of a variant name (the tensor-core phase-row configs are their own family, mma_phase)."""
    base = name.split("(")[0]
    return base + "_phase" if ",phase" in name else base


def case_key(row):
    """(layer, batch, dtype, sparsity, pattern) of a result row (pattern 'unstructured' when absent)."""
    return (row["layer"], row["batch"], row["dtype"], round(float(row["sparsity"]), 6),
            row.get("pattern", "unstructured"))


def compare_rows(old_rows, row):
    """{family: (old best us, new best us, old / new)} for the families of `row` that the same case of
    `old_rows` (an earlier --json of this script) also timed; {} when the case is not there."""
    old = {case_key(r): r for r in old_rows}.get(case_key(row))
    if old is None:
        return {}
    out = {}
    for fam, (_, t_new) in row["best_per_family"].items():
        if fam in old["best_per_family"]:
            t_old = old["best_per_family"][fam][1]
            out[fam] = (t_old, t_new, t_old / t_new)
    return out
