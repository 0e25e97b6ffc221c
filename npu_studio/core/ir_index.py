"""The dispatch index: every dispatch of a compile, in every snapshot.

`index_file` parses one phase snapshot with the MLIR parser (see
mlir_text) and returns a `PhaseIndex`: one `DispatchRecord` per dispatch
site of the host program, in program order, with its executable, root
compute op (described by linalg_info), the ops fused with it, the ONNX
nodes named by its locations, its producers and its text ranges.

Which ops are dispatch sites depends on the phase:
  dispatch-creation  flow.dispatch.workgroups / flow.dispatch.region
  flow               flow.dispatch
  stream..targets    stream.async.dispatch / stream.cmd.dispatch
  hal                hal.command_buffer.dispatch
Executables are flow/stream/hal.executable ops. IREE keeps executable and
export symbol names stable from flow on, so `link_phase_indexes`
links a dispatch across phases by (export name, occurrence); the
dispatch-creation phase has no names yet and is linked by program order.
Within one snapshot, a site calling an executable that IREE deduplicated
against an earlier site's names only its call-site location's nodes;
linking gives it the full list from its dispatch-creation region.
The vm phase has neither executables nor typed dispatch ops (only
`vm.call.variadic @hal.command_buffer.dispatch`) and indexes no dispatches.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from iree.compiler import ir

from npu_studio.core.linalg_info import OpDescription, describe_linalg_op
from npu_studio.core.mlir_text import ParsedSnapshot, TextRange

SCHEMA_VERSION = 1

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
_CONV_KINDS = ("conv", "depthwise_conv")
_COMPUTE_KINDS = ("conv", "depthwise_conv", "matmul", "batch_matmul")
_IGNORED_LOC_NAMES = ("unknown",)


@dataclass
class DispatchRecord:
    index: int
    executable: str | None = None
    export: str | None = None
    workload: tuple[int | None, ...] | None = None
    root: OpDescription | None = None
    fused: list[str] = field(default_factory=list)
    onnx_nodes: list[str] = field(default_factory=list)
    root_onnx_nodes: list[str] = field(default_factory=list)
    call_sites: list[TextRange] = field(default_factory=list)
    producers: list[int] = field(default_factory=list)
    text_range: TextRange | None = None
    config: dict = field(default_factory=dict)
    target: str | None = None
    ops: list[OpDescription] = field(default_factory=list)

    def to_json(self) -> dict:
        return {
            "index": self.index,
            "executable": self.executable,
            "export": self.export,
            "workload": list(self.workload) if self.workload is not None else None,
            "root": op_to_json(self.root) if self.root is not None else None,
            "fused": list(self.fused),
            "onnx_nodes": list(self.onnx_nodes),
            "root_onnx_nodes": list(self.root_onnx_nodes),
            "call_sites": [r.to_json() for r in self.call_sites],
            "producers": list(self.producers),
            "text_range": self.text_range.to_json() if self.text_range else None,
            "config": self.config,
            "target": self.target,
        }


@dataclass
class PhaseIndex:
    phase: str
    path: str | None
    dispatches: list[DispatchRecord]
    op_counts_by_dialect: dict[str, int]
    num_executables: int
    num_dispatch_sites: int
    size_bytes: int
    num_lines: int

    def to_json(self) -> dict:
        return {
            "schema_version": SCHEMA_VERSION,
            "phase": self.phase,
            "path": self.path,
            "num_executables": self.num_executables,
            "num_dispatch_sites": self.num_dispatch_sites,
            "size_bytes": self.size_bytes,
            "num_lines": self.num_lines,
            "op_counts_by_dialect": dict(self.op_counts_by_dialect),
            "dispatches": [d.to_json() for d in self.dispatches],
        }


def op_to_json(d: OpDescription) -> dict:
    def t(x):
        return {"shape": list(x.shape), "dtype": x.dtype}

    return {
        "op_name": d.op_name,
        "kind": d.kind,
        "dims": dict(d.dims),
        "strides": list(d.strides),
        "dilations": list(d.dilations),
        "groups": d.groups,
        "loop_ranges": list(d.loop_ranges),
        "iterator_types": list(d.iterator_types),
        "loop_dims": list(d.loop_dims),
        "inputs": [t(x) for x in d.inputs],
        "outputs": [t(x) for x in d.outputs],
        "flops": d.flops,
        "bytes_read": d.bytes_read,
        "bytes_written": d.bytes_written,
        "dtype": d.dtype,
    }


# ---------------------------------------------------------------- locations


def onnx_names(loc: ir.Location, out: list[str], seen: set[str]) -> None:
    """Append the ONNX node names a location mentions (nested, in order)."""
    if isinstance(loc, ir.NameLoc):
        name = loc.name_str
        if (
            name
            and name not in _IGNORED_LOC_NAMES
            and not name.startswith("graph:")
            and not name.startswith("onnx_importer.")
            and name not in seen
        ):
            seen.add(name)
            out.append(name)
        onnx_names(loc.child_loc, out, seen)
    elif isinstance(loc, ir.FusedLoc):
        for sub in loc.locations:
            onnx_names(sub, out, seen)
    elif isinstance(loc, ir.CallSiteLoc):
        onnx_names(loc.callee, out, seen)
        onnx_names(loc.caller, out, seen)


# ---------------------------------------------------------------- labels


def fused_label(d: OpDescription) -> str:
    """Short human label of a fused op: "fill", "bias add", "relu", ..."""
    if d.op_name == "linalg.fill":
        return "fill"
    if d.kind == "copy/transpose":
        return "transpose" if d.op_name != "linalg.copy" else "copy"
    if d.kind == "pooling":
        return "pool"
    if d.kind != "elementwise":
        return d.kind
    ops = list(d.body_ops)
    relu = "arith.select" in ops and "arith.cmpf" in ops or "arith.maximumf" in ops
    core = [o for o in ops if o not in ("arith.select", "arith.cmpf", "arith.maximumf")]
    parts: list[str] = []
    ranks = [len(t.shape) for t in d.inputs]
    broadcast = len(ranks) >= 2 and min(ranks) < max(ranks)
    if {"arith.subf", "arith.mulf", "arith.addf"} <= set(core) and len(core) >= 4:
        parts.append("batch norm")
    elif core == ["arith.addf"]:
        parts.append("bias add" if broadcast else "add")
    elif core == ["arith.mulf"]:
        parts.append("scale" if broadcast else "mul")
    elif core:
        parts.append("+".join(o.split(".", 1)[1] for o in core[:3]) + ("…" if len(core) > 3 else ""))
    if relu:
        parts.append("relu")
    return " + ".join(parts) if parts else "elementwise"


# The root is the dispatch's main op: MAC work first, then ops that reduce
# (a pooling or reduction feeds the elementwise ops fused after it), then
# the op with the most FLOPs. The NPU maps dispatches by this same root.
_ROOT_PRIORITY = {**{k: 0 for k in _COMPUTE_KINDS}, "pooling": 1, "reduction": 2, "softmax": 2}


def _choose_root(ops: list[OpDescription]) -> OpDescription | None:
    if not ops:
        return None
    return min(ops, key=lambda d: (_ROOT_PRIORITY.get(d.kind, 3), -(d.flops or 0)))


# ---------------------------------------------------------------- attributes


def _sym_name(op: ir.Operation) -> str | None:
    if "sym_name" in op.attributes:
        return ir.StringAttr(op.attributes["sym_name"]).value
    return None


def _symbol_path(attr: ir.Attribute) -> list[str]:
    s = ir.SymbolRefAttr(attr)
    return list(s.value)


def _tile_lists(text: str) -> dict[str, list[int]]:
    """`name = [1, 2, 3]` pairs at any nesting level of an attribute's text."""
    out: dict[str, list[int]] = {}
    i = 0
    while True:
        eq = text.find("= [", i)
        if eq < 0:
            return out
        close = text.find("]", eq)
        j = eq - 1
        while j >= 0 and text[j] == " ":
            j -= 1
        k = j
        while k >= 0 and (text[k].isalnum() or text[k] == "_"):
            k -= 1
        name = text[k + 1 : j + 1]
        items = [x.strip() for x in text[eq + 3 : close].split(",") if x.strip()]
        try:
            out[name] = [int(x.split(":")[0]) for x in items]
        except ValueError:
            pass
        i = close + 1


def _pipeline_name(text: str) -> str | None:
    at = text.find("pipeline")
    if at < 0:
        return None
    rest = text[at + len("pipeline") :].lstrip(" =")
    lt = rest.find("<")
    if rest.startswith("#") and lt >= 0:
        end = rest.find(">", lt)
        return rest[lt + 1 : end]
    end = min([p for p in (rest.find(","), rest.find(">"), rest.find(" ")) if p >= 0] or [len(rest)])
    return rest[:end]


def _const_int(v: ir.Value) -> int | None:
    owner = v.owner
    if isinstance(owner, ir.Block):
        return None
    if owner.name in ("arith.constant", "vm.const.i32", "vm.const.i64") and "value" in owner.attributes:
        try:
            return ir.IntegerAttr(owner.attributes["value"]).value
        except (TypeError, ValueError):
            return None
    return None


# ---------------------------------------------------------------- indexing


class _Executable:
    def __init__(self, name: str, op: ir.Operation, pos_op: ir.Operation):
        self.name = name
        self.op = op
        self.pos_op = pos_op
        self.exports: list[str] = []
        self.linalg: list[tuple[ir.Operation, OpDescription]] = []
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

    def owner_exec(op: ir.Operation) -> _Executable | None:
        p = _executable_of(op)
        if p is None:
            return None
        if p.name in _REGION_SITES:
            return region_sites.get(hash(p))
        name = _sym_name(p)
        return executables.get(name) if name else None

    for op, pos_op in snap.walk_pairs():
        name = op.name
        dialect = name.split(".", 1)[0]
        counts[dialect] = counts.get(dialect, 0) + 1
        if name in _EXECUTABLE_OPS:
            ex_name = _sym_name(op) or f"<executable {len(executables)}>"
            executables[ex_name] = _Executable(ex_name, op, pos_op)
            continue
        if name in _SITE_OPS:
            sites.append((op, pos_op))
            if name in _REGION_SITES:
                region_sites[hash(op)] = _Executable(None, op, pos_op)
            continue
        if name == "hal.executable.lookup.function" and "entry_point" in op.attributes:
            lookups[hash(op)] = _symbol_path(op.attributes["entry_point"])
            continue
        ex = owner_exec(op)
        if ex is None:
            continue
        if name.endswith(".executable.export"):
            ex.exports.append(_sym_name(op))
        elif name == "hal.executable.variant" and "target" in op.attributes:
            ex.target = _target_name(op)
        elif name == "func.func" and "translation_info" in op.attributes:
            ti = str(op.attributes["translation_info"])
            ex.config["translation_info"] = ti
            pipeline = _pipeline_name(ti)
            if pipeline:
                ex.config["pipeline"] = pipeline
        elif name.startswith("linalg."):
            d = describe_linalg_op(op)
            if d is not None:
                ex.linalg.append((op, d))
        onnx_names(op.location, ex.onnx, ex.seen)

    records: list[DispatchRecord] = []
    site_index: dict[int, int] = {}
    site_uses: dict[str | None, int] = {}
    for op, _ in sites:
        path = _site_symbol(op, lookups)
        key = path[0] if path else None
        site_uses[key] = site_uses.get(key, 0) + 1
    first_use: set[str] = set()
    for i, (op, pos_op) in enumerate(sites):
        rec = DispatchRecord(index=i)
        ex = _site_executable(op, executables, region_sites, lookups, rec)
        rec.call_sites = [r for r in [snap.text_range(pos_op)] if r is not None]
        rec.workload = _workload(op)
        if ex is not None:
            _fill_from_executable(rec, ex, snap)
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
            rec.producers = _producers(op, site_index)

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
    return index_text(path.read_text(encoding="utf-8"), phase, path)


def _target_name(variant: ir.Operation) -> str:
    text = str(variant.attributes["target"])
    # #hal.executable.target<"llvm-cpu", "embedded-elf-x86_64", {...}>
    parts = []
    i = 0
    while len(parts) < 2:
        q = text.find('"', i)
        if q < 0:
            break
        e = text.find('"', q + 1)
        parts.append(text[q + 1 : e])
        i = e + 1
    return "/".join(parts) if parts else _sym_name(variant) or text


def _site_executable(op, executables, region_sites, lookups, rec) -> _Executable | None:
    if op.name in _REGION_SITES:
        return region_sites.get(hash(op))
    path = _site_symbol(op, lookups)
    if not path:
        return None
    rec.executable = path[0]
    rec.export = path[-1] if len(path) > 1 else None
    return executables.get(path[0])


def _site_symbol(op, lookups) -> list[str] | None:
    name = op.name
    path: list[str] | None = None
    if "entry_points" in op.attributes:
        eps = op.attributes["entry_points"]
        if len(eps):
            path = _symbol_path(eps[0])
    elif "entry_point" in op.attributes:
        path = _symbol_path(op.attributes["entry_point"])
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
    rec.root = _choose_root(descs)
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
                rec.config["tile_sizes"] = _tile_lists(lc)
    if not rec.config and ex.config:
        rec.config = dict(ex.config)
    rec.fused = [fused_label(d) for d in descs if d is not rec.root]
    rec.target = ex.target


def _workload(op: ir.Operation) -> tuple[int | None, ...] | None:
    if op.name not in ("flow.dispatch", "stream.async.dispatch", "flow.dispatch.workgroups"):
        return None
    if "operandSegmentSizes" not in op.attributes:
        return None
    sizes = list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))
    n = sizes[0] if op.name != "stream.async.dispatch" else 0
    return tuple(_const_int(op.operands[i]) for i in range(n))


_PASS_THROUGH_LIMIT = 64


def _producers(op: ir.Operation, site_index: dict[int, int]) -> list[int]:
    """Dispatch sites whose results reach op's operands through host ops."""
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
        if owner.name in ("arith.constant", "util.global.load"):
            continue
        stack.extend(owner.operands)
    return sorted(found)


# ---------------------------------------------------------------- workspace


def _link_key(rec: DispatchRecord) -> str | None:
    return rec.export or rec.executable


def index_workspace_phases(paths_by_phase: dict[str, Path]) -> dict[str, PhaseIndex]:
    """Index every given phase and link them (see `link_phase_indexes`).

    Raises SnapshotParseError for the first snapshot that does not parse;
    a caller that wants the others anyway indexes them one by one with
    `index_file` and links what it has with `link_phase_indexes`.
    """
    out = {phase: index_file(p, phase) for phase, p in paths_by_phase.items()}
    link_phase_indexes(out)
    return out


def link_phase_indexes(indexes: dict[str, PhaseIndex]) -> None:
    """Renumber already-built phase indexes to the flow phase's order, in place.

    A dispatch keeps its flow-phase index in every phase it can be linked
    in (by export name and occurrence; dispatch-creation by program order,
    when it has as many sites as flow); each phase's records are sorted by
    that index, and records that cannot be linked are numbered after the
    linked ones. A linked record also takes from flow what its own phase
    cannot show: producers, the root op when the phase holds only binaries
    (hal), ONNX nodes when it names none. When dispatch-creation is linked,
    every record (flow's too) takes the ONNX nodes of its dispatch-creation
    region first: there each site still has its own body, while from flow
    on a site whose executable IREE deduplicated against an earlier one has
    only its call-site location. Without a flow index (missing, or it did
    not parse) nothing changes. Linking twice gives the same result.
    """
    flow = indexes.get("flow")
    if flow is None:
        return
    by_key: dict[tuple[str | None, int], DispatchRecord] = {}
    occurrence: dict[str | None, int] = {}
    for rec in flow.dispatches:
        k = _link_key(rec)
        n = occurrence.get(k, 0)
        occurrence[k] = n + 1
        by_key[(k, n)] = rec
    # dispatch-creation still has every dispatch inline, so its records name
    # each site's own nodes even where flow shares one executable.
    per_site: list[DispatchRecord] | None = None
    dc = indexes.get("dispatch-creation")
    if dc is not None and dc is not flow and len(dc.dispatches) == len(flow.dispatches):
        per_site = list(dc.dispatches)
        for rec, f in zip(per_site, flow.dispatches):
            rec.index = f.index
            rec.executable, rec.export = f.executable, f.export
        for f, site in zip(flow.dispatches, per_site):
            _take_site_names(f, site)
    for phase, idx in indexes.items():
        if idx is flow or idx is dc or not idx.dispatches:
            continue
        occurrence = {}
        linked: list[DispatchRecord] = []
        unlinked: list[DispatchRecord] = []
        for rec in idx.dispatches:
            k = _link_key(rec)
            n = occurrence.get(k, 0)
            occurrence[k] = n + 1
            f = by_key.get((k, n))
            if f is None:
                unlinked.append(rec)
                continue
            rec.index = f.index
            if not rec.producers:
                rec.producers = list(f.producers)
            if rec.root is None:
                # hal holds only binaries: the op is the one flow saw
                rec.root, rec.fused, rec.ops = f.root, list(f.fused), list(f.ops)
                rec.root_onnx_nodes = list(f.root_onnx_nodes)
            if not rec.onnx_nodes:
                rec.onnx_nodes = list(f.onnx_nodes)
            if per_site is not None and f.index < len(per_site):
                _take_site_names(rec, per_site[f.index])
            linked.append(rec)
        linked.sort(key=lambda r: r.index)
        for i, rec in enumerate(unlinked):
            rec.index = len(flow.dispatches) + i
        idx.dispatches = linked + unlinked


def _take_site_names(rec: DispatchRecord, site: DispatchRecord) -> None:
    """Give rec the ONNX nodes its dispatch-creation region names (first)."""
    if site.onnx_nodes:
        rec.onnx_nodes = list(site.onnx_nodes) + [n for n in rec.onnx_nodes if n not in site.onnx_nodes]
    if site.root_onnx_nodes:
        rec.root_onnx_nodes = list(site.root_onnx_nodes)


def to_json(index: PhaseIndex) -> str:
    return json.dumps(index.to_json(), indent=2)
