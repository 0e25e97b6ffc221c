"""Every hal.executable of a compiled workspace, as IREE dumped it during the compile.

The normal compile (core/compile/compiler.py) passes the three
`--iree-hal-dump-executable-*-to` flags, so a workspace holds, under
`executables/`:

    sources/module_NAME.mlir                  the executable before configuration
    configurations/configured_module_NAME.mlir  after strategy selection (lowering_config tile sizes)
    benchmarks/module_NAME_VARIANT_benchmark.mlir  a standalone module timing it

NAME is the `hal.executable` symbol, exactly what
`--iree-hal-substitute-executable-source=NAME=FILE` matches. The symbol is
read from each file rather than its file name, and each executable is tied
to its dispatches, ONNX nodes and ops through the dispatch index (flow
phase, linked with dispatch-creation for per-site node names).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from ..compile.compiler import EXECUTABLES_DIR
from ..errors import StudioError

_EXECUTABLE_SYMBOL = re.compile(r"^\s*hal\.executable\s+(?:public\s+|private\s+)?@(\"[^\"]+\"|[\w$.\-]+)", re.M)


@dataclass
class ExecutableInfo:
    name: str  # the hal.executable symbol IREE matches for substitution
    source: Path | None = None
    configuration: Path | None = None
    benchmark: Path | None = None  # None: IREE wrote no standalone benchmark for it
    dispatches: list[int] = field(default_factory=list)
    onnx_nodes: list[str] = field(default_factory=list)
    ops: str = ""
    exports: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {
            "name": self.name,
            "source": str(self.source) if self.source else None,
            "configuration": str(self.configuration) if self.configuration else None,
            "benchmark": str(self.benchmark) if self.benchmark else None,
            "dispatches": list(self.dispatches),
            "onnx_nodes": list(self.onnx_nodes),
            "ops": self.ops,
            "exports": list(self.exports),
        }


def executable_names(text: str) -> list[tuple[str, int, int]]:
    """The hal.executable symbols defined in `text`, each with the 1-based line and column of its `@`."""
    found = []
    for m in _EXECUTABLE_SYMBOL.finditer(text):
        at = m.start(1) - 1
        line = text.count("\n", 0, at) + 1
        col = at - (text.rfind("\n", 0, at) + 1) + 1
        found.append((m.group(1).strip('"'), line, col))
    return found


def _by_symbol(folder: Path) -> dict[str, Path]:
    out: dict[str, Path] = {}
    if not folder.is_dir():
        return out
    for path in sorted(folder.glob("*.mlir")):
        try:
            names = executable_names(path.read_text(errors="replace"))
        except OSError:  # a folder or an unreadable file in the compiler's dumps: not a dump
            continue
        if names:
            out.setdefault(names[0][0], path)
    return out


def source_dumps(ws) -> dict[str, Path]:
    """Executable symbol -> IREE's dump of its source (executables/sources/)."""
    return _by_symbol(ws.root / EXECUTABLES_DIR / "sources")


def op_summary(rec) -> str:
    """"conv 8x498x498x3x3x3 f32 + bias add": the root op, its loop ranges, dtype and fused ops."""
    root = rec.root
    if root is None:
        return ""
    ranges = "x".join("?" if r is None else str(r) for r in root.loop_ranges)
    text = f"{root.kind} {ranges} {root.dtype}".strip()
    shown = [f for f in rec.fused if f != "fill"]  # a fill only initialises the accumulator
    return text + (" + " + ", ".join(shown) if shown else "")


def list_executables(ws, flow_index=None) -> list[ExecutableInfo]:
    """Every dumped executable of workspace `ws`, in dispatch order.

    `flow_index` is the workspace's linked flow-phase PhaseIndex when the
    caller has one (the app does); otherwise it is built here.
    """
    folder = ws.root / EXECUTABLES_DIR
    sources = _by_symbol(folder / "sources")
    if not sources:
        raise StudioError(ws.root, "no executable sources dumped; compile the workspace again")
    configs = _by_symbol(folder / "configurations")
    benches = _by_symbol(folder / "benchmarks")
    infos = {
        name: ExecutableInfo(name, path, configs.get(name), benches.get(name))
        for name, path in sources.items()
    }
    for rec in flow_index.dispatches if flow_index is not None else _dispatch_records(ws):
        info = infos.get(rec.executable)
        if info is None:
            continue
        info.dispatches.append(rec.index)
        info.onnx_nodes += [n for n in rec.onnx_nodes if n not in info.onnx_nodes]
        if rec.export and rec.export not in info.exports:
            info.exports.append(rec.export)
        if not info.ops:
            info.ops = op_summary(rec)
    return sorted(infos.values(), key=lambda i: (min(i.dispatches) if i.dispatches else 1 << 30, i.name))


def find_executable(ws, name: str) -> ExecutableInfo:
    for info in list_executables(ws):
        if info.name == name:
            return info
    raise StudioError(ws.root, f"no executable @{name} in this build (see `npu-studio executables`)")


def _dispatch_records(ws):
    from ..ir.dispatch_index import index_workspace_phases

    phases = {p: ws.snapshot_path(p) for p in ("dispatch-creation", "flow") if ws.snapshot_path(p).is_file()}
    if "flow" not in phases:
        return []
    return index_workspace_phases(phases)["flow"].dispatches

