"""Indexing one phase snapshot: its dispatch sites, executables and their ops."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from ...lazy_import import lazy_module

from npu_studio.core.ir.linalg import OpDescription, describe_linalg_op
from npu_studio.core.ir.linalg.requant import quantization_of
from npu_studio.core.ir.mlir_text import ParsedSnapshot

from .iree_attrs import const_int, pipeline_name, sym_name, symbol_path, target_name, tile_lists
from .labels import choose_root, fused_label
from .movement import LOAD, STORE, describe_movement
from .provenance import onnx_names
from .records import DispatchRecord, PhaseIndex

ir = lazy_module("iree.compiler.ir")  # loaded on first use: not at the app's start

_EXECUTABLE_OPS = frozenset({"flow.executable", "stream.executable", "hal.executable"})
_SITE_OPS = frozenset(
    {
        "flow.dispatch",
        "flow.dispatch.workgroups",
        "flow.dispatch.region",
        "stream.async.dispatch",
        "stream.cmd.dispatch",
        "hal.command_buffer.dispatch",
    }
)
_REGION_SITES = frozenset({"flow.dispatch.workgroups", "flow.dispatch.region"})


class _Executable:
    def __init__(self, name: str, op: ir.Operation, pos_op: ir.Operation):
        self.name = name
        self.op = op
        self.pos_op = pos_op
        self.exports: list[str] = []
        self.linalg: list[tuple[ir.Operation, OpDescription]] = []
        self.moves: list[ir.Operation] = []  # tensor loads and stores: a body without linalg moves data
        self.onnx: list[str] = []
        self.seen: set[str] = set()
        self.config: dict = {}
        self.target: str | None = None


def _executable_of(op: ir.Operation) -> ir.Operation | None:
    p = op.parent
    while p is not None:
        if p.name in _EXECUTABLE_OPS or p.name in _REGION_SITES:
            return p
        p = p.parent
    return None


def index_text(text: str, phase: str, path: str | Path | None = None) -> PhaseIndex:
    snap = ParsedSnapshot(text, path)
    counts: dict[str, int] = {}
    executables: dict[str, _Executable] = {}
    region_sites: dict[int, _Executable] = {}  # hash of region op -> pseudo-executable
    sites: list[tuple[ir.Operation, ir.Operation]] = []
    lookups: dict[int, list[str]] = {}  # hal: function_id value owner -> symbol path
    stored: dict[str, list] = {}  # global -> the values an initializer stores in it

    def owner_exec(op: ir.Operation) -> _Executable | None:
        p = _executable_of(op)
        if p is None:
            return None
        if p.name in _REGION_SITES:
            return region_sites.get(hash(p))
        name = sym_name(p)
        return executables.get(name) if name else None

    for op, pos_op in snap.walk_pairs():
        name = op.name
        dialect = name.split(".", 1)[0]
        counts[dialect] = counts.get(dialect, 0) + 1
        if name in _EXECUTABLE_OPS:
            ex_name = sym_name(op) or f"<executable {len(executables)}>"
            executables[ex_name] = _Executable(ex_name, op, pos_op)
            continue
        if name in _SITE_OPS:
            sites.append((op, pos_op))
            if name in _REGION_SITES:
                region_sites[hash(op)] = _Executable(None, op, pos_op)
            continue
        if name == "util.global.store" and "global" in op.attributes and op.operands:
            stored.setdefault(str(op.attributes["global"]), []).append(op.operands[0])
            continue
        if name == "hal.executable.lookup.function" and "entry_point" in op.attributes:
            lookups[hash(op)] = symbol_path(op.attributes["entry_point"])
            continue
        ex = owner_exec(op)
        if ex is None:
            continue
        if name.endswith(".executable.export"):
            ex.exports.append(sym_name(op))
        elif name == "hal.executable.variant" and "target" in op.attributes:
            ex.target = target_name(op)
        elif name == "func.func" and "translation_info" in op.attributes:
            ti = str(op.attributes["translation_info"])
            ex.config["translation_info"] = ti
            pipeline = pipeline_name(ti)
            if pipeline:
                ex.config["pipeline"] = pipeline
        elif name in (LOAD, STORE):
            ex.moves.append(op)
        elif name.startswith("linalg."):
            d = describe_linalg_op(op)
            if d is not None:
                ex.linalg.append((op, d))
        onnx_names(op.location, ex.onnx, ex.seen)

    records: list[DispatchRecord] = []
    site_index: dict[int, int] = {}
    site_uses: dict[str | None, int] = {}
    for op, _ in sites:
        symbol = _site_symbol(op, lookups)  # not `path`: that names the snapshot file (PhaseIndex.path)
        key = symbol[0] if symbol else None
        site_uses[key] = site_uses.get(key, 0) + 1
    first_use: set[str] = set()
    for i, (op, pos_op) in enumerate(sites):
        rec = DispatchRecord(index=i)
        ex = _site_executable(op, executables, region_sites, lookups, rec)
        rec.call_sites = [r for r in [snap.text_range(pos_op)] if r is not None]
        rec.workload = _workload(op)
        if ex is not None:
            _fill_from_executable(rec, ex, snap)
            if rec.movement is not None and rec.movement.kind == "insert" and _fills_a_splat(op):
                rec.movement = replace(rec.movement, kind="pad")
        # The site's own location names this dispatch's nodes. An executable
        # shared by several sites (IREE deduplicates executables, keeping the
        # first one outlined, i.e. the first site's) names only the first
        # site's nodes in its ops: later sites keep their site names only.
        site_names: list[str] = []
        onnx_names(op.location, site_names, set())
        later_use = False
        if rec.executable is not None and site_uses.get(rec.executable, 0) > 1:
            later_use = rec.executable in first_use
            first_use.add(rec.executable)
        if later_use:
            rec.onnx_nodes = site_names
            rec.root_onnx_nodes = site_names[:1]
        elif site_names:
            rec.onnx_nodes = site_names + [n for n in rec.onnx_nodes if n not in site_names]
        site_index[hash(op)] = i
        records.append(rec)
    for rec, (op, _) in zip(records, sites):
        if op.name in ("flow.dispatch", *_REGION_SITES):
            rec.producers = _producers(op, site_index, stored)

    return PhaseIndex(
        phase=phase,
        path=str(path) if path is not None else None,
        dispatches=records,
        op_counts_by_dialect=dict(sorted(counts.items())),
        num_executables=len(executables),
        num_dispatch_sites=len(sites),
        size_bytes=len(text.encode("utf-8")),
        num_lines=text.count("\n") + (0 if text.endswith("\n") else 1),
    )


def index_file(path: str | Path, phase: str) -> PhaseIndex:
    path = Path(path)
    from ...textio import read_text

    return index_text(read_text(path), phase, path)  # BadFile names file and byte offset


def _site_executable(op, executables, region_sites, lookups, rec) -> _Executable | None:
    if op.name in _REGION_SITES:
        return region_sites.get(hash(op))
    path = _site_symbol(op, lookups)
    if not path:
        return None
    rec.executable = path[0]
    rec.export = path[-1] if len(path) > 1 else None
    return executables.get(path[0])


def _fills_a_splat(site) -> bool:
    """The site writes into a tensor splat from one value: a pad (a concatenation writes into an empty one)."""
    for value in site.operands:
        owner = value.owner
        if not isinstance(owner, ir.Block) and owner.name in ("flow.tensor.splat", "stream.async.splat"):
            return True
    return False


def _site_symbol(op, lookups) -> list[str] | None:
    name = op.name
    path: list[str] | None = None
    if "entry_points" in op.attributes:
        eps = op.attributes["entry_points"]
        if len(eps):
            path = symbol_path(eps[0])
    elif "entry_point" in op.attributes:
        path = symbol_path(op.attributes["entry_point"])
    elif name == "hal.command_buffer.dispatch":
        for v in op.operands:
            owner = v.owner
            if not isinstance(owner, ir.Block) and hash(owner) in lookups:
                path = lookups[hash(owner)]
                break
    return path


def _fill_from_executable(rec: DispatchRecord, ex: _Executable, snap: ParsedSnapshot) -> None:
    if ex.name is not None:
        rec.executable = ex.name
        rec.text_range = snap.text_range(ex.pos_op)
    if rec.export is None and len(ex.exports) == 1:
        rec.export = ex.exports[0]
    descs = [d for _, d in ex.linalg]
    rec.ops = descs
    rec.root = choose_root(descs)
    if rec.root is None:
        rec.movement = describe_movement(ex.moves)
    rec.onnx_nodes = list(ex.onnx)
    for op, d in ex.linalg:
        if d is rec.root:
            names: list[str] = []
            onnx_names(op.location, names, set())
            rec.root_onnx_nodes = names
            if "lowering_config" in op.attributes:
                lc = str(op.attributes["lowering_config"])
                rec.config = dict(ex.config)
                rec.config["lowering_config"] = lc
                rec.config["tile_sizes"] = tile_lists(lc)
    if not rec.config and ex.config:
        rec.config = dict(ex.config)
    rec.fused = [fused_label(d) for d in descs if d is not rec.root]
    rec.target = ex.target
    mac = rec.root is not None and rec.root.kind in ("conv", "depthwise_conv", "matmul", "batch_matmul")
    rec.quant = quantization_of(
        tuple(t.dtype for t in rec.root.inputs if t.shape) if mac else (),
        rec.root.outputs[0].dtype if mac and rec.root.outputs else "", [op for op, _ in ex.linalg])


def _workload(op: ir.Operation) -> tuple[int | None, ...] | None:
    if op.name not in ("flow.dispatch", "stream.async.dispatch", "flow.dispatch.workgroups"):
        return None
    if "operandSegmentSizes" not in op.attributes:
        return None
    sizes = list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))
    n = sizes[0] if op.name != "stream.async.dispatch" else 0
    return tuple(const_int(op.operands[i]) for i in range(n))


_PASS_THROUGH_LIMIT = 64


def _producers(op: ir.Operation, site_index: dict[int, int], stored: dict[str, list] | None = None) -> list[int]:
    """Dispatch sites whose results reach op's operands through host ops (and through a global an
    initializer's dispatch stored: a constant computed by a dispatch is that dispatch's result)."""
    found: list[int] = []
    stack = [v for v in op.operands]
    seen: set[int] = set()
    steps = 0
    while stack and steps < _PASS_THROUGH_LIMIT:
        v = stack.pop()
        owner = v.owner
        if isinstance(owner, ir.Block):
            continue
        h = hash(owner)
        if h in seen:
            continue
        seen.add(h)
        steps += 1
        if h in site_index:
            if site_index[h] not in found:
                found.append(site_index[h])
            continue
        if owner.name == "util.global.load" and stored and "global" in owner.attributes:
            stack.extend(stored.get(str(owner.attributes["global"]), []))
            continue
        if owner.name in ("arith.constant", "util.global.load"):
            continue
        stack.extend(owner.operands)
    return sorted(found)
