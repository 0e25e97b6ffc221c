"""The `sweep` command's summary: counts, fronts and knees, the best points, the checks."""

from __future__ import annotations

from .analysis import best, front, knee

FRONTS = (("time_us", "energy_pj"), ("time_us", "area_mm2"), ("time_us", "sram_kib"))
BEST = ("cycles", "energy_pj", "edp_pj_us", "area_mm2")


def _point(row: dict, params: list[str]) -> str:
    return f"point {row['point']} (" + ", ".join(f"{p}={row[p]}" for p in params) + ")"


def summary(result, params: list[str]) -> str:
    rows = result.rows
    ok = [r for r in rows if r["status"] == "ok"]
    meeting = [r for r in ok if r["meets_constraints"]]
    lines = [f"{len(rows)} rows: {len(ok)} feasible, {len(rows) - len(ok)} infeasible, "
             f"{len(meeting)} meeting the constraints; computed {result.computed}, "
             f"from the cache {result.cached}",
             f"table: {result.parquet} and {result.csv}"]
    if result.damaged:
        lines.append(f"recomputed {len(result.damaged)} damaged cached row(s): "
                     + "; ".join(result.damaged[:5]) + ("; ..." if len(result.damaged) > 5 else ""))
    for r in rows:
        if r["status"] != "ok":
            lines.append(f"  infeasible: {r['model']} {_point(r, params)}: {r['reason']}")
    for model in dict.fromkeys(r["model"] for r in rows):
        mine = [r for r in rows if r["model"] == model]
        lines.append(f"{model}:")
        for x, y in FRONTS:
            if not all(x in r and y in r for r in mine[:1]):
                continue
            f = front(mine, (x, y))
            k = knee(f, x, y)
            lines.append(f"  front {x} vs {y}: {len(f)} points "
                         + ", ".join(str(r["point"]) for r in f)
                         + (f"; knee {_point(k, params)} {x}={k[x]:g} {y}={k[y]:g}" if k else ""))
        for metric in BEST:
            b = best(mine, metric)
            if b is not None:
                lines.append(f"  least {metric}: {_point(b, params)} = {b[metric]:g}")
    if result.violations or result.problems:
        lines.append(f"checks: {len(result.violations) + len(result.problems)} problems")
        lines += [f"  {v}" for v in result.violations] + [f"  {p}" for p in result.problems]
    else:
        lines.append("checks: monotone in SRAM and bandwidth; no negative or NaN metric")
    return "\n".join(lines) + "\n"
