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
from ..plan.rules import RULES
from ..target.target import NpuTarget

if TYPE_CHECKING:
    from ..plan.dispatch_plan import DispatchPlan


@dataclass(frozen=True)
class Fallback:
    index: int
    rule: str
    reason: str
    flops: int


@dataclass
class Coverage:
    dispatches: int = 0
    npu_dispatches: int = 0
    flops: int = 0
    npu_flops: int = 0
    by_unit: dict[str, int] = field(default_factory=dict)
    fallbacks: list[Fallback] = field(default_factory=list)

    @property
    def flops_percent(self) -> float:
        return 100.0 * self.npu_flops / self.flops if self.flops else 100.0

    def by_rule(self) -> dict[str, list[Fallback]]:
        """Fallbacks grouped by rule, in the rules' checking order."""
        order = {r.id: i for i, r in enumerate(RULES)}
        out: dict[str, list[Fallback]] = {}
        for f in sorted(self.fallbacks, key=lambda f: (order.get(f.rule, len(order)), f.index)):
            out.setdefault(f.rule, []).append(f)
        return out

    def summary(self) -> str:
        """`52 of 58 dispatches on the NPU, 99.98% of 7.7 GFLOP`"""
        return (f"{self.npu_dispatches} of {self.dispatches} dispatches on the NPU, "
                f"{self.flops_percent:.2f}% of {format_count(self.flops)}FLOP")

    def lines(self) -> list[str]:
        """The summary, the units used, then one line per rule with its dispatches."""
        units = ", ".join(f"{n} {u}" for u, n in sorted(self.by_unit.items()))
        out = [self.summary() + (f" ({units})" if units else "")]
        for rule, fs in self.by_rule().items():
            flops = sum(f.flops for f in fs)
            which = ", ".join(f"#{f.index}" for f in fs[:8]) + (" ..." if len(fs) > 8 else "")
            out.append(f"  {len(fs)} on the CPU by rule {rule} ({format_count(flops)}FLOP): "
                       f"{which}; e.g. {fs[0].reason}")
        return out


def _add(c: Coverage, index: int, legal: bool, unit: str, flops: int, rule: str,
         reason: str) -> None:
    c.dispatches += 1
    c.flops += flops
    c.by_unit[unit] = c.by_unit.get(unit, 0) + 1
    if legal:
        c.npu_dispatches += 1
        c.npu_flops += flops
    else:
        c.fallbacks.append(Fallback(index, rule, reason, flops))


def coverage(program: NpuProgram) -> Coverage:
    c = Coverage()
    for d in program.dispatches:
        _add(c, d.index, d.legal, d.unit if d.legal else "cpu", d.flops, d.rule, d.reason)
    return c


def coverage_of_plans(plans: list[DispatchPlan]) -> Coverage:
    c = Coverage()
    for p in plans:
        _add(c, p.site.index, p.legal, p.unit if p.legal else "cpu", p.flops, p.rule, p.reason)
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
