"""The `npu` dialect: an NPU program as MLIR in generic form.

The dialect is not registered: its ops are printed in generic form and
parsed back with `allow_unregistered_dialects`, so MLIR's own parser and
printer handle the text, and `verify` (ours) checks the invariants:

  module {npu.version, npu.format, npu.target, npu.sram_peak, npu.dram_peak}
    "npu.dispatch"() {index, symbol, kind, legal, reason, loop_dims, ...}
    "npu.buffer"() {id, size, dtype, shape, memory = "dram"|"sram", offset, kind, live}
    %tN = "npu.conv"(%deps...) ({            // npu.matmul, npu.pool, ..., npu.transfer, npu.fallback
        "npu.dma"() {direction = "in", src, dst, bytes}
        "npu.compute"() {srcs, dsts, ops}
        "npu.dma"() {direction = "out", ...}
        "npu.cpu"() {srcs, dsts, ops}          // fallback tasks
        "npu.dma_copy"() {srcs, dsts, bytes}   // npu.transfer tasks: DRAM to DRAM
      }) {id, dispatch, fallback, tile_offsets, tile_sizes, tile_<dim>..., memory}
      : (!npu.token, ...) -> !npu.token

Dependencies are SSA uses of the tokens the tasks produce.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from iree.compiler import ir

from ...errors import StudioError
from ...ir.context import mlir_context
from . import npu_text_reader
from .npu_ir import TRANSFER_OP, VERSION, Buffer, DispatchInfo, NpuProgram, Step, Task
from ..target.target import NpuTarget

FORMAT = "npu-studio.npu-ir"
TOKEN = "!npu.token"
STEP_OP = {"dma_in": "npu.dma", "dma_out": "npu.dma", "compute": "npu.compute", "cpu": "npu.cpu",
           "dma_copy": "npu.dma_copy"}


class NpuDialectError(StudioError, ValueError):
    """Invalid NPU MLIR; one line (several problems joined with '; '), naming `path` when known."""

    def __init__(self, message: str, path: str | Path | None = None):
        super().__init__(path, "; ".join(ln.strip() for ln in str(message).splitlines() if ln.strip()))


# -- printing ------------------------------------------------------------------
def _str(s: str) -> str:
    out = []
    for ch in s:
        if ch in '"\\':
            out.append("\\" + ch)
        elif " " <= ch <= "~":
            out.append(ch)
        else:
            out.extend(f"\\{b:02X}" for b in ch.encode("utf-8"))
    return '"' + "".join(out) + '"'


def _attr(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return f"{v} : i64"
    if isinstance(v, str):
        return _str(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_attr(x) for x in v) + "]"
    if isinstance(v, dict):
        return _dict(v)
    raise TypeError(f"cannot encode {v!r} as an attribute")


def _dict(d: dict) -> str:
    return "{" + ", ".join(f"{k} = {_attr(v)}" for k, v in d.items()) + "}"


def _step_text(s: Step) -> str:
    if s.kind in ("dma_in", "dma_out"):
        attrs = {"direction": s.kind[4:], "src": s.srcs[0], "dst": s.dsts[0], "bytes": s.bytes}
    elif s.kind == "dma_copy":
        attrs = {"srcs": list(s.srcs), "dsts": list(s.dsts), "bytes": s.bytes}
    else:
        attrs = {"srcs": list(s.srcs), "dsts": list(s.dsts), "ops": s.ops}
    return f'"{STEP_OP[s.kind]}"() {_dict(attrs)} : () -> ()'


def to_mlir(p: NpuProgram) -> str:
    dispatches = {d.index: d for d in p.dispatches}
    head = {"npu.format": FORMAT, "npu.version": p.version, "npu.target": p.target.to_dict(),
            "npu.sram_peak": p.sram_peak, "npu.dram_peak": p.dram_peak}
    lines = [f"module attributes {_dict(head)} {{"]
    for d in p.dispatches:
        lines.append(f'  "npu.dispatch"() {_dict(asdict(d))} : () -> ()')
    for b in p.buffers:
        attrs = asdict(b)
        attrs["memory"] = attrs.pop("placement")
        lines.append(f'  "npu.buffer"() {_dict(attrs)} : () -> ()')
    for t in p.tasks:
        attrs: dict[str, Any] = {"id": t.id, "dispatch": t.dispatch, "fallback": t.fallback,
                                 "tile_offsets": list(t.tile_offsets),
                                 "tile_sizes": list(t.tile_sizes)}
        d = dispatches.get(t.dispatch)
        if d is not None and not t.fallback:
            for name, size in zip(d.loop_dims, t.tile_sizes):
                attrs[f"tile_{name.lower()}"] = size
        # fallbacks and DRAM-to-DRAM transfers touch no SRAM
        attrs["memory"] = "dram" if t.fallback or t.op == TRANSFER_OP else "sram"
        deps = ", ".join(f"%t{x}" for x in t.deps)
        types = ", ".join([TOKEN] * len(t.deps))
        lines.append(f'  %t{t.id} = "{t.op}"({deps}) ({{')
        lines.extend(f"    {_step_text(s)}" for s in t.steps)
        lines.append(f"  }}) {_dict(attrs)} : ({types}) -> {TOKEN}")
    lines.append("}")
    return "\n".join(lines) + "\n"


# -- parsing -------------------------------------------------------------------
def _py(a: ir.Attribute) -> Any:
    if isinstance(a, ir.BoolAttr):
        return a.value
    if isinstance(a, ir.IntegerAttr):
        return a.value
    if isinstance(a, ir.StringAttr):
        return a.value
    if isinstance(a, ir.ArrayAttr):
        return [_py(x) for x in a]
    if isinstance(a, ir.DictAttr):
        return {a[i].name: _py(a[i].attr) for i in range(len(a))}
    raise NpuDialectError(f"unexpected attribute {a}")


def _attrs(op: ir.Operation) -> dict[str, Any]:
    attrs = op.attributes
    return {attrs[i].name: _py(attrs[i].attr) for i in range(len(attrs))}


def parse_module(text: str, context: ir.Context | None = None) -> ir.Module:
    ctx = context or mlir_context()
    ctx.allow_unregistered_dialects = True
    try:
        return ir.Module.parse(text, ctx)
    except ir.MLIRError as e:
        raise NpuDialectError(f"cannot parse NPU MLIR: {e}") from None


def _task_id(op: ir.Operation) -> int | None:
    if "id" not in op.attributes:
        return None
    a = op.attributes["id"]
    return a.value if isinstance(a, ir.IntegerAttr) else None


def _token_owner(v: ir.Value) -> ir.Operation | None:
    owner = v.owner
    return None if isinstance(owner, ir.Block) else owner.operation


@dataclass
class _Op:
    """One top-level op read out of the bindings once: verifier and converter share it."""

    name: str
    attrs: dict[str, Any]
    steps: list[tuple[str, dict[str, Any]]]
    deps: list[int | None]  # task id of each operand's defining op (None: not a task)


def _read(module: ir.Module) -> tuple[dict[str, Any], list[_Op]]:
    ops = []
    for op in module.body.operations:
        op = op.operation
        steps = [(s.operation.name, _attrs(s.operation))
                 for s in (op.regions[0].blocks[0].operations if op.regions else ())]
        deps = []
        for v in op.operands:
            owner = _token_owner(v)
            deps.append(_task_id(owner) if owner is not None and owner.name.startswith("npu.") else None)
        ops.append(_Op(op.name, _attrs(op), steps, deps))
    return _attrs(module.operation), ops


@npu_text_reader.without_gc
def from_mlir(text: str) -> NpuProgram:
    """Parse, verify, and convert back to an NpuProgram."""
    printed = npu_text_reader.read(text)  # to_mlir's form, read without the bindings; else None
    head, ops = (printed[0], [_Op(*o) for o in printed[1]]) if printed else _read(parse_module(text))
    errors = _verify(head, ops)
    if errors:
        raise NpuDialectError("invalid NPU MLIR:\n" + "\n".join(errors))
    dispatches, buffers, tasks = [], [], []
    for op in ops:
        a = dict(op.attrs)
        if op.name == "npu.dispatch":
            dispatches.append(DispatchInfo.from_dict(a))
        elif op.name == "npu.buffer":
            a["placement"] = a.pop("memory")
            buffers.append(Buffer.from_dict(a))
        else:
            steps = []
            for name, sa in op.steps:
                if name == "npu.dma":
                    steps.append(Step("dma_" + sa["direction"], (sa["src"],), (sa["dst"],),
                                      bytes=sa["bytes"]))
                elif name == "npu.dma_copy":
                    steps.append(Step("dma_copy", tuple(sa["srcs"]), tuple(sa["dsts"]),
                                      bytes=sa["bytes"]))
                else:
                    kind = "cpu" if name == "npu.cpu" else "compute"
                    steps.append(Step(kind, tuple(sa["srcs"]), tuple(sa["dsts"]), ops=sa["ops"]))
            tasks.append(Task(a["id"], a["dispatch"], op.name, a["fallback"],
                              tuple(a["tile_offsets"]), tuple(a["tile_sizes"]), tuple(steps),
                              tuple(op.deps)))
    return NpuProgram(NpuTarget.from_dict(head["npu.target"]), tuple(dispatches),
                      tuple(buffers), tuple(tasks), head["npu.sram_peak"], head["npu.dram_peak"],
                      version=head["npu.version"])


# -- verifier ------------------------------------------------------------------
_DISPATCH = {"index": int, "symbol": str, "location": str, "kind": str, "op_name": str,
             "legal": bool, "reason": str, "loop_dims": list, "loop_ranges": list,
             "iterator_types": list, "tile_sizes": list, "loop_order": list, "num_tiles": int,
             "sram_bytes": int, "inputs": list, "outputs": list, "deps": list}
_BUFFER = {"id": str, "size": int, "dtype": str, "shape": list, "memory": str, "offset": int,
           "kind": str, "live": list}
_TASK = {"id": int, "dispatch": int, "fallback": bool, "tile_offsets": list, "tile_sizes": list,
         "memory": str}
_STEPS = {"npu.dma": {"direction": str, "src": str, "dst": str, "bytes": int},
          "npu.compute": {"srcs": list, "dsts": list, "ops": int},
          "npu.cpu": {"srcs": list, "dsts": list, "ops": int},
          "npu.dma_copy": {"srcs": list, "dsts": list, "bytes": int}}


def _check(where: str, attrs: dict, spec: dict, errors: list[str]) -> bool:
    ok = True
    for key, typ in spec.items():
        if key not in attrs:
            errors.append(f"{where}: missing attribute '{key}'")
            ok = False
        elif not isinstance(attrs[key], typ) or (typ is int and isinstance(attrs[key], bool)):
            errors.append(f"{where}: attribute '{key}' must be {typ.__name__}, got {attrs[key]!r}")
            ok = False
    return ok


def verify(module: ir.Module) -> list[str]:
    """Invariants of an npu-dialect module; [] when it is valid."""
    return _verify(*_read(module))


def _verify(head: dict[str, Any], ops: list[_Op]) -> list[str]:
    errors: list[str] = []
    if head.get("npu.version") != VERSION:
        errors.append(f"module: npu.version must be {VERSION}, got {head.get('npu.version')!r}")
    if not isinstance(head.get("npu.target"), dict):
        errors.append("module: missing dictionary attribute 'npu.target'")
    dispatches: dict[int, dict] = {}
    buffers: dict[str, dict] = {}
    tasks: list[tuple[_Op, dict]] = []
    for op in ops:
        a = op.attrs
        if op.name == "npu.dispatch":
            if _check("npu.dispatch", a, _DISPATCH, errors):
                dispatches[a["index"]] = a
        elif op.name == "npu.buffer":
            if _check("npu.buffer", a, _BUFFER, errors):
                if a["memory"] not in ("dram", "sram"):
                    errors.append(f"npu.buffer {a['id']}: memory must be dram or sram")
                if a["size"] < 0 or a["offset"] < 0:
                    errors.append(f"npu.buffer {a['id']}: negative size or offset")
                if a["id"] in buffers:
                    errors.append(f"npu.buffer {a['id']}: duplicate id")
                buffers[a["id"]] = a
        elif op.name.startswith("npu."):
            where = f"{op.name} (task {a.get('id', '?')})"
            if _check(where, a, _TASK, errors):
                tasks.append((op, a))
        else:
            errors.append(f"{op.name}: not an npu op")
    ids: dict[int, _Op] = {}
    for op, a in tasks:
        if a["id"] in ids:
            errors.append(f"{op.name} (task {a['id']}): duplicate task id")
        ids[a["id"]] = op
    for op, a in tasks:
        where = f"{op.name} (task {a['id']})"
        if (op.name == "npu.fallback") != a["fallback"]:
            errors.append(f"{where}: fallback flag must be set exactly on npu.fallback")
        d = dispatches.get(a["dispatch"])
        if d is None:
            errors.append(f"{where}: dispatch #{a['dispatch']} does not exist")
        elif not a["fallback"] and op.name != "npu.transfer":
            ranges, sizes, offs = d["loop_ranges"], a["tile_sizes"], a["tile_offsets"]
            if len(sizes) != len(ranges) or len(offs) != len(ranges):
                errors.append(f"{where}: tile rank {len(sizes)} != dispatch loops {len(ranges)}")
            else:
                for name, r, s, o in zip(d["loop_dims"], ranges, sizes, offs):
                    if s <= 0:
                        errors.append(f"{where}: tile size {name}={s} must be positive")
                    elif o < 0 or o + s > r:
                        errors.append(f"{where}: tile {name} [{o}, {o + s}) exceeds dim {r}")
                    key = f"tile_{name.lower()}"
                    if a.get(key, s) != s:
                        errors.append(f"{where}: {key}={a[key]} disagrees with tile_sizes")
        for dep in op.deps:
            if dep not in ids:
                errors.append(f"{where}: dependency is not a task")
        for step, sa in op.steps:
            spec = _STEPS.get(step)
            if spec is None:
                errors.append(f"{where}: unknown step op {step}")
                continue
            if not _check(f"{where} {step}", sa, spec, errors):
                continue
            refs = [sa["src"], sa["dst"]] if step == "npu.dma" else sa["srcs"] + sa["dsts"]
            for r in refs:
                if r not in buffers:
                    errors.append(f"{where} {step}: unknown buffer {r!r}")
            if step == "npu.dma_copy" and any(
                    buffers[r]["memory"] != "dram" for r in refs if r in buffers):
                errors.append(f"{where} npu.dma_copy: must move dram -> dram")
            if step == "npu.dma":
                want = {"in": ("dram", "sram"), "out": ("sram", "dram")}.get(sa["direction"])
                if want is None:
                    errors.append(f"{where} npu.dma: direction must be in or out, got {sa['direction']!r}")
                elif all(r in buffers for r in refs) and \
                        (buffers[sa["src"]]["memory"], buffers[sa["dst"]]["memory"]) != want:
                    errors.append(f"{where} npu.dma {sa['direction']}: must move {want[0]} -> {want[1]}")
    errors.extend(_cycles(tasks))
    return errors


def _cycles(tasks) -> list[str]:
    """Dependencies must form a DAG (a graph region allows cycles)."""
    graph = {a["id"]: [d for d in op.deps if d is not None] for op, a in tasks}
    state: dict[int, int] = {}
    for start in graph:
        if start in state:
            continue
        stack = [(start, iter(graph[start]))]
        state[start] = 1
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                state[node] = 2
                stack.pop()
            elif state.get(nxt) == 1:
                return [f"task {nxt}: dependency cycle through task {node}"]
            elif nxt not in state and nxt in graph:
                state[nxt] = 1
                stack.append((nxt, iter(graph[nxt])))
    return []
