"""How much of a model runs on the NPU: dispatches and FLOPs, fallbacks by rule.

`coverage(program)` summarises a finished NPU program; `legalize_flow`
runs only the legality analysis on a flow snapshot (no tiling, no
memory plan, no tasks), which is all a coverage check over many models
needs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from typing import TYPE_CHECKING

from ...units import format_count
from ..program.npu_ir import NpuProgram
from ..backend.registry import backend_of
from ..target.target import NpuTarget

if TYPE_CHECKING:
    from ..plan.dispatch_plan import DispatchPlan


@dataclass(frozen=True)
class Fallback:
    index: int
    rule: str
    reason: str
    flops: int
    flops_known: bool = True


@dataclass
class Coverage:
    dispatches: int = 0
    npu_dispatches: int = 0
    flops: int = 0  # of the dispatches whose FLOP count is known
    npu_flops: int = 0
    by_unit: dict[str, int] = field(default_factory=dict)
    fallbacks: list[Fallback] = field(default_factory=list)
    unknown: list[int] = field(default_factory=list)  # dispatches whose FLOP count is unknown (dynamic shapes)
    rule_order: tuple[str, ...] = ()  # the backend's rule ids in checking order

    @property
    def flops_percent(self) -> float | None:
        """The NPU's share of the known FLOP; None when there is none to share."""
        return 100.0 * self.npu_flops / self.flops if self.flops else None

    def by_rule(self) -> dict[str, list[Fallback]]:
        """Fallbacks grouped by rule, in the rules' checking order."""
        order = {r: i for i, r in enumerate(self.rule_order)}
        out: dict[str, list[Fallback]] = {}
        for f in sorted(self.fallbacks, key=lambda f: (order.get(f.rule, len(order)), f.index)):
            out.setdefault(f.rule, []).append(f)
        return out

    def summary(self, unknown: bool = True) -> str:
        """`52 of 58 dispatches on the NPU, 99.98% of 7.7 GFLOP`; with dynamic shapes, what is unknown
        (left out with `unknown=False`)."""
        text = f"{self.npu_dispatches} of {self.dispatches} dispatches on the NPU"
        if self.flops:
            text += f", {self.flops_percent:.2f}% of {'the ' if self.unknown else ''}{format_count(self.flops)}FLOP" \
                    f"{' known' if self.unknown else ''}"
        elif not self.unknown:
            text += ", no FLOP (data movement only)"
        return text + (f"; {self.unknown_text()}" if unknown and self.unknown else "")

    def unknown_text(self) -> str:
        n = len(self.unknown)
        return f"FLOP unknown for {n} dispatch{'es' if n != 1 else ''} with dynamic shapes: {_which(self.unknown)}"

    def lines(self) -> list[str]:
        """The summary, the units used, then one line per rule with its dispatches."""
        units = ", ".join(f"{n} {u}" for u, n in sorted(self.by_unit.items()))
        out = [self.summary(unknown=False) + (f" ({units})" if units else "")]
        if self.unknown:
            out.append(f"  {self.unknown_text()}")
        for rule, fs in self.by_rule().items():
            known = [f for f in fs if f.flops_known]
            flops = f"{format_count(sum(f.flops for f in known))}FLOP" if known else "FLOP unknown"
            if known and len(known) < len(fs):
                flops += f" and {len(fs) - len(known)} unknown"
            out.append(f"  {len(fs)} on the CPU by rule {rule} ({flops}): {_which([f.index for f in fs])}; "
                       f"e.g. {fs[0].reason}")
        return out


def _which(indices: list[int]) -> str:
    return ", ".join(f"#{i}" for i in indices[:8]) + (" ..." if len(indices) > 8 else "")


def _add(c: Coverage, index: int, legal: bool, unit: str, flops: int, rule: str,
         reason: str, flops_known: bool = True) -> None:
    c.dispatches += 1
    if flops_known:
        c.flops += flops
    else:
        c.unknown.append(index)
    c.by_unit[unit] = c.by_unit.get(unit, 0) + 1
    if legal:
        c.npu_dispatches += 1
        c.npu_flops += flops if flops_known else 0
    else:
        c.fallbacks.append(Fallback(index, rule, reason, flops, flops_known))


def _rule_order(target: NpuTarget | None) -> tuple[str, ...]:
    return tuple(r.id for r in backend_of(target).rules) if target is not None else ()


def coverage(program: NpuProgram) -> Coverage:
    c = Coverage(rule_order=_rule_order(program.target))
    for d in program.dispatches:
        # a dynamic loop range (-1) leaves its ops' FLOP uncounted: the total is not known
        _add(c, d.index, d.legal, d.unit if d.legal else "cpu", d.flops, d.rule, d.reason,
             not any(r < 0 for r in d.loop_ranges))
    return c


def coverage_of_plans(plans: list[DispatchPlan], target: NpuTarget | None = None) -> Coverage:
    """The coverage of plans; `target`: the one they were checked on (its rules order the fallbacks)."""
    c = Coverage(rule_order=_rule_order(target))
    for p in plans:
        _add(c, p.site.index, p.legal, p.unit if p.legal else "cpu", p.flops, p.rule, p.reason,
             all(op.flops is not None for op in p.record.ops))
    return c


def legalize_flow(flow: str | Path, target: NpuTarget) -> list[DispatchPlan]:
    """The legality analysis alone of a flow snapshot (text or path): each dispatch's plan after npu-legalize."""
    from iree.compiler import ir  # here: the coverage of a program needs no MLIR (the app's start)

    from ...ir.context import mlir_context
    from ...ir.dispatch_index import index_text
    from ...ir.flow_graph import FlowGraph
    from ..plan.legality import analyze

    text = Path(flow).read_text(encoding="utf-8") if isinstance(flow, Path) or (
        "\n" not in str(flow) and Path(flow).exists()) else str(flow)
    index = index_text(text, "flow")
    ctx = mlir_context()
    module = ir.Module.parse(text, ctx)
    graph = FlowGraph(module.operation, index)
    return [analyze(graph, s, target) for s in graph.sites]
