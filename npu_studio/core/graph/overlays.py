"""What the graph can show on its dispatch nodes, as data: one overlay per kind.

Each overlay writes its values into `node.overlay` under its own keys and
describes itself in `graph.overlays[kind]`; a kind whose source is missing
(no NPU program, no trace run, no measured run) is absent, with a note saying
why. Sources, all read from what the workspace or a run already holds:

  unit      the NPU program (npu/model.npu.json): the unit, or CPU with the rule that sent it back
  cycles    the last simulation (npu/model.sim.json): simulated cycles per dispatch
  sram      the same simulation: the dispatch's SRAM peak in bytes
  error     the last numerics trace (`npu-studio trace --json`, or the Trace dock's last run):
            max relative error per paired dispatch, the first departing dispatch marked
  measured  a measured run (`npu-studio measure --json`): host microseconds per dispatch
  edits     substitutions switched on (by executable) and dispatches a flow edit changed
"""

from __future__ import annotations

from .model import DataflowGraph

UNIT, CYCLES, SRAM, ERROR, MEASURED, EDITS = "unit", "cycles", "sram", "error", "measured", "edits"
KINDS = (UNIT, CYCLES, SRAM, ERROR, MEASURED, EDITS)
# the key holding each overlay's value in node.overlay, its title and unit
INFO = {
    UNIT: ("unit", "NPU unit or CPU fallback", ""),
    CYCLES: ("cycles", "Simulated cycles", "cycles"),
    SRAM: ("sram_peak", "SRAM peak", "bytes"),
    ERROR: ("max_rel_error", "Numerics error (max relative)", ""),
    MEASURED: ("measured_us", "Measured time", "µs"),
    EDITS: ("edit", "Substitutions and edits", ""),
}


def value_key(kind: str) -> str:
    return INFO[kind][0]


def _declare(graph: DataflowGraph, kind: str, **extra) -> None:
    _key, title, unit = INFO[kind]
    graph.overlays[kind] = {"title": title, "unit": unit, **extra}


def add_npu(graph: DataflowGraph, program, sim=None) -> None:
    """`program`: NpuProgram of this graph's flow; `sim`: its SimResult (None: not simulated)."""
    for info in program.dispatches:
        node = graph.dispatch_node(info.index)
        if node is None:
            continue
        node.overlay["unit"] = info.unit if info.legal else "cpu"
        if not info.legal:
            node.overlay["fallback_rule"] = info.rule
            node.overlay["fallback_reason"] = info.reason
    _declare(graph, UNIT)
    if sim is None:
        graph.notes.append("no simulation yet: run the NPU simulation for cycles and SRAM peak")
        return
    for stats in sim.dispatches:
        node = graph.dispatch_node(stats.index)
        if node is not None:
            node.overlay["cycles"] = stats.cycles
            node.overlay["sram_peak"] = stats.sram_peak
    _declare(graph, CYCLES, clock_mhz=sim.clock_mhz)
    _declare(graph, SRAM, capacity=sim.sram_capacity)


def add_trace(graph: DataflowGraph, report: dict) -> None:
    """`report`: a numerics trace's JSON (`TraceReport.to_dict()`)."""
    first = report.get("first_divergent")
    for d in report.get("dispatches", []):
        node = graph.dispatch_node(d.get("index", -1))
        if node is None:
            continue
        if d.get("onnx_tensor") is None:
            node.overlay["trace"] = "unpaired"
            continue
        node.overlay["max_rel_error"] = d.get("max_rel_error")
        node.overlay["trace"] = "departs" if d.get("departs") else "agrees"
        if d.get("index") == first:
            node.overlay["first_departing"] = True
    _declare(graph, ERROR, first_departing=first, cannot_locate=report.get("cannot_locate", ""))


def add_measured(graph: DataflowGraph, rows: list[dict]) -> None:
    """`rows`: a measured run's JSON rows (`npu-studio measure --json`)."""
    for row in rows:
        node = graph.dispatch_node(row.get("dispatch", -1))
        if node is not None and row.get("measured_cpu_us") is not None:
            node.overlay["measured_us"] = row["measured_cpu_us"]
    _declare(graph, MEASURED)


def add_edits(graph: DataflowGraph, substituted: dict[str, str], changed: set[int]) -> None:
    """`substituted`: executable symbol -> one-line description of its substitution;
    `changed`: dispatches an edit of the flow phase changed (compare.py against the compiler's text)."""
    executables = {}
    for node in graph.dispatches():
        exe = node.symbol.split("::")[0].lstrip("@")
        executables.setdefault(exe, []).append(node)
    for exe, text in substituted.items():
        for node in executables.get(exe, []):
            node.overlay["edit"] = "substituted"
            node.overlay["substitution"] = text
    for index in changed:
        node = graph.dispatch_node(index)
        if node is not None and "edit" not in node.overlay:
            node.overlay["edit"] = "edited"
    _declare(graph, EDITS)
