"""The NPU pass pipeline on a `flow`-phase module.

Our own passes, written in Python and run by MLIR's pass manager next
to MLIR's canonicalize/cse (IREE's passes are not touched):

  npu-legalize     every dispatch legal or not, with a reason
  npu-tile         tile sizes and loop order per legal dispatch
  npu-plan-memory  DRAM and SRAM placement (interval allocation)
  npu-schedule     tasks, steps and dependencies

Results go onto the `flow.dispatch` ops as `npu.*` attributes and into
an `NpuProgram` (`run_npu_pipeline`).
"""

from __future__ import annotations

import math
from pathlib import Path

from iree.compiler import ir, passmanager

from ...ir.context import first_diagnostic, mlir_context
from ...ir.dispatch_index import PhaseIndex, index_text
from ...ir.flow_graph import FlowGraph
from ...ir.linalg import dtype_nbytes
from ...textio import read_text
from .dispatch_plan import DispatchPlan
from .legality import analyze
from .memory_plan import Request, allocate
from ..program.npu_ir import Buffer, DispatchInfo, NpuError, NpuProgram
from ..backend.registry import backend_of
from ..backend.rules import TILE
from .schedule import DispatchTiles, FallbackDispatch, TiledOperand, TransferDispatch, build_tasks, task_positions
from ..target.target import NpuTarget, load_target
from .tile_search import best_tiling
from .tiling import Tiling, TilingProblem, access_bytes, tile_counts
from ..backend.api import BackendError, NoTileFits

# Cleanup inside the dispatch bodies only: the host call sites (and so the
# dispatch numbering) stay exactly as in the snapshot.
CLEANUP = "flow.executable(builtin.module(func.func(canonicalize,cse)))"
NPU_PASSES = ("npu-legalize", "npu-tile", "npu-plan-memory", "npu-schedule")


def array_loops(kind: str, loops, target: NpuTarget):
    """Loops mapped onto the MAC array (rows, cols) or the vector lanes."""
    ws = target.dataflow == "weight-stationary"
    want = {
        "conv": ("C", "F") if ws else ("F", "OW"),
        "depthwise_conv": ("C", "OW"),
        "matmul": ("K", "N") if ws else ("M", "N"),
        "batch_matmul": ("K", "N") if ws else ("M", "N"),
    }.get(kind)
    loop_names = [lp.name for lp in loops]
    if want is None:  # vector unit: lanes along the innermost parallel loop
        par = [i for i, lp in enumerate(loops) if not lp.reduction]
        return ((par[-1],), (target.vector_lanes,)) if par else ((), ())
    loops, sizes = [], []
    for name, size in zip(want, (target.mac_rows, target.mac_cols)):
        if name in loop_names:
            loops.append(loop_names.index(name))
            sizes.append(size)
    return tuple(loops), tuple(sizes)


class _State:
    def __init__(self, target: NpuTarget, strict: bool, index: PhaseIndex | None = None):
        self.target, self.strict, self.index = target, strict, index
        self.backend = backend_of(target)
        self.choose_tiling = self.backend.choose_tiling or best_tiling  # the shared search by default
        self.graph: FlowGraph | None = None
        self.plans: list[DispatchPlan] = []
        self.buffers: list[Buffer] = []
        self.program: NpuProgram | None = None
        self.error: Exception | None = None

    # -- passes ----------------------------------------------------------------
    def legalize(self, module: ir.Operation) -> None:
        self.graph = FlowGraph(module, self.index)
        self.plans = [analyze(self.graph, s, self.target) for s in self.graph.sites]
        for plan in self.plans:
            self._mark(plan)
        bad = [plan for plan in self.plans if not plan.legal]
        if self.strict and bad:
            raise NpuError("model rejected by npu-legalize (strict):\n" + "\n".join(
                f"Dispatch #{plan.site.index} not supported: {plan.reason}" for plan in bad))

    def tile(self, module: ir.Operation) -> None:
        for plan in self.plans:
            if not plan.legal or plan.unit not in ("mac", "vector"):
                continue
            arr, arr_sizes = array_loops(plan.kind, plan.loops, self.target)
            # softmax needs a whole row per tile (max, then sum, then divide)
            whole = tuple(i for i, lp in enumerate(plan.loops) if lp.reduction) \
                if plan.kind == "softmax" else ()
            problem = TilingProblem(plan.loops, tuple(b.access for b in plan.accesses), arr, arr_sizes,
                                    whole)
            try:
                plan.tiling = self.choose_tiling(problem, self.target, lambda t, plan=plan: self._tiled(plan, t))
            except NoTileFits as e:
                plan.tiling_error = str(e)
            if not self.backend.rules.check(plan, self.target, TILE):  # sram-fit: no tile fits
                self._mark(plan)
                continue
            t = plan.tiling
            op = plan.site.op
            op.attributes["npu.tile"] = _i64_array(t.sizes)
            op.attributes["npu.loop_order"] = _i64_array(t.order)
            op.attributes["npu.tiles"] = _i64(math.prod(tile_counts(plan.loops, t.sizes)))
        if self.strict and any(not plan.legal for plan in self.plans):
            raise NpuError("model rejected by npu-tile (strict):\n" + "\n".join(
                f"Dispatch #{plan.site.index} not supported: {plan.reason}"
                for plan in self.plans if not plan.legal))

    def plan_memory(self, module: ir.Operation) -> None:
        counts = [self._num_tasks(plan) for plan in self.plans]
        self.positions = task_positions(counts)
        total = self.positions[-1][1] if self.positions else 0
        g = self.graph
        dram: list[tuple[str, int, str, tuple, str, tuple[int, int]]] = []
        for b in g.buffers.values():
            if b.kind == "intermediate" and b.first is not None:
                start = self.positions[b.first][0]
                end = max([self.positions[u][1] for u in b.uses] + [self.positions[b.first][1]])
                live = (start, end)
            else:
                live = (0, max(total, 1))
            dram.append((b.id, b.nbytes, b.dtype, tuple(d if d is not None else -1 for d in b.shape),
                         b.kind, live))
        for plan in self.plans:
            if plan.legal:
                for k, c in enumerate(plan.consts):
                    t = c.results[0].type
                    shape = tuple(t.shape) if isinstance(t, ir.ShapedType) else ()
                    dtype = str(t.element_type) if isinstance(t, ir.ShapedType) else str(t)
                    dram.append((_const_id(plan, k), math.prod(shape) * dtype_nbytes(dtype),
                                 dtype, shape, "weight", (0, max(total, 1))))
        offs, self.dram_peak = allocate([Request(i, max(s, 1), *lv) for i, s, _, _, _, lv in dram])
        self.buffers = [Buffer(i, s, dt, sh, "dram", offs[i], k, lv) for i, s, dt, sh, k, lv in dram]
        sram: list[tuple[Request, str, tuple]] = []
        for plan in self.plans:
            t = plan.tiling
            if not plan.legal or t is None:
                continue
            live = self.positions[plan.site.index]
            for b in plan.accesses:
                for slot in (0, 1):
                    sram.append((Request(_slot_id(plan, b.access.name, slot),
                                         access_bytes(b.access, t.sizes), *live), b.dtype, b.shape))
        offs, self.sram_peak = allocate([r for r, _, _ in sram], self.target.sram_bytes)
        self.buffers += [Buffer(r.id, r.size, dt, (), "sram", offs[r.id], "tile", (r.start, r.end))
                         for r, dt, _ in sram]
        for plan in self.plans:
            t = plan.tiling
            if plan.legal and t is not None:
                plan.site.op.attributes["npu.sram_bytes"] = _i64(t.sram_bytes)
        module.attributes["npu.sram_peak"] = _i64(self.sram_peak)
        module.attributes["npu.dram_peak"] = _i64(self.dram_peak)

    def schedule(self, module: ir.Operation) -> None:
        deps = {s.index: set(s.deps) for s in self.graph.sites}
        self._memory_deps(deps)
        work = []
        for plan in self.plans:
            s = plan.site
            if plan.legal and plan.unit == "dma":
                tr = plan.transfer
                work.append(TransferDispatch(s.index, tuple(s.reads), tuple(s.writes),
                                             tr.bytes_read, tr.bytes_written))
            elif plan.legal:
                work.append(self._tiled(plan, plan.tiling)[0])
            else:
                ops = (plan.desc.flops or 0) if plan.desc else 0
                work.append(FallbackDispatch(s.index, tuple(s.reads), tuple(s.writes), ops))
        tasks = build_tasks(work, deps)
        for plan in self.plans:
            first, end = self.positions[plan.site.index]
            plan.site.op.attributes["npu.tasks"] = _i64_array((first, end - first))
        module.attributes["npu.num_tasks"] = _i64(len(tasks))
        infos = []
        for plan in self.plans:
            s, t = plan.site, plan.tiling
            tr = plan.transfer if plan.legal else None
            infos.append(DispatchInfo(
                index=s.index, symbol=s.export, location=s.location, kind=plan.kind,
                op_name=plan.op_name, legal=plan.legal, reason=plan.reason,
                unit=plan.unit if plan.legal else "cpu", rule=plan.rule, flops=plan.flops,
                dims={k: -1 if v is None else v for k, v in plan.desc.dims.items()} if plan.desc else {},
                dtype=plan.desc.dtype if plan.desc else (
                    self.graph.buffers[s.writes[0]].dtype if s.writes else ""),
                acc_dtype=plan.acc_dtype,
                transposed=plan.transposed, transpose_by=self.target.transpose_by if plan.transposed
                else "", vector_cost=plan.vector_cost if plan.unit in ("mac", "vector") else 0,
                transfer=tr.kind if tr else "", pad_value=tr.pad_value if tr else "",
                transfer_read=tr.bytes_read if tr else 0,
                requant=tuple(r.to_dict() for r in plan.requant), epilogue=plan.epilogue,
                loop_dims=tuple(lp.name for lp in plan.loops),
                loop_ranges=tuple(lp.size for lp in plan.loops),
                iterator_types=tuple("reduction" if lp.reduction else "parallel" for lp in plan.loops),
                tile_sizes=t.sizes if plan.legal and t else (),
                loop_order=t.order if plan.legal and t else (),
                num_tiles=math.prod(tile_counts(plan.loops, t.sizes)) if plan.legal and t else 0,
                sram_bytes=t.sram_bytes if plan.legal and t else 0,
                inputs=tuple(s.reads), outputs=tuple(s.writes),
                deps=tuple(sorted(s.deps))))
        self.program = NpuProgram(self.target, tuple(infos), tuple(self.buffers), tuple(tasks),
                                  self.sram_peak, self.dram_peak)

    # -- helpers ---------------------------------------------------------------
    def _tiled(self, plan: DispatchPlan, t: Tiling) -> tuple[DispatchTiles, DispatchInfo]:
        """The dispatch as npu-schedule turns it into tasks with tiling `t`, and
        what the simulator reads of it (the tile search simulates both)."""
        s = plan.site
        out_bytes = dtype_nbytes(self.graph.buffers[s.writes[0]].dtype) if s.writes else 0
        ops = tuple(
            TiledOperand(b.access.name, b.access.role, b.access, self._dram_of(plan, b.source),
                         (_slot_id(plan, b.access.name, 0), _slot_id(plan, b.access.name, 1)),
                         dtype_nbytes(b.dtype),
                         out_bytes if b.access.role == "output" and out_bytes else
                         dtype_nbytes(b.dtype))
            for b in plan.accesses)
        tiles = DispatchTiles(s.index, plan.kind, plan.loops, t.sizes, t.order, ops, tuple(s.writes))
        info = DispatchInfo(
            index=s.index, symbol=s.export, location="", kind=plan.kind, op_name=plan.op_name,
            legal=True, reason="", loop_dims=tuple(lp.name for lp in plan.loops),
            loop_ranges=tuple(lp.size for lp in plan.loops),
            iterator_types=tuple("reduction" if lp.reduction else "parallel" for lp in plan.loops),
            tile_sizes=t.sizes, loop_order=t.order, num_tiles=0, sram_bytes=t.sram_bytes,
            inputs=tuple(s.reads), outputs=tuple(s.writes), deps=(), unit=plan.unit,
            vector_cost=plan.vector_cost, dtype=plan.desc.dtype if plan.desc else "")
        return tiles, info

    def _mark(self, plan: DispatchPlan) -> None:
        op = plan.site.op
        op.attributes["npu.index"] = _i64(plan.site.index)
        op.attributes["npu.kind"] = ir.StringAttr.get(plan.kind)
        op.attributes["npu.legal"] = ir.BoolAttr.get(plan.legal)
        op.attributes["npu.reason"] = ir.StringAttr.get(plan.reason)

    def _num_tasks(self, plan: DispatchPlan) -> int:
        t = plan.tiling
        return math.prod(tile_counts(plan.loops, t.sizes)) if plan.legal and t else 1

    def _dram_of(self, plan: DispatchPlan, src) -> str | None:
        if src.kind == "const":
            return _const_id(plan, src.index)
        if src.kind == "arg" and src.index < len(plan.site.args):
            return plan.site.args[src.index]
        return None

    def _memory_deps(self, deps: dict[int, set[int]]) -> None:
        """A dispatch reusing memory another one used must run after it."""
        users: dict[str, set[int]] = {}
        for plan in self.plans:
            s = plan.site
            for b in s.reads + s.writes:
                users.setdefault(b, set()).add(s.index)
            for b in self.buffers:
                if b.id.startswith(f"s{s.index}."):
                    users.setdefault(b.id, set()).add(s.index)
        by_place: dict[str, list[Buffer]] = {}
        for b in self.buffers:
            by_place.setdefault(b.placement, []).append(b)
        for bufs in by_place.values():
            bufs = sorted(bufs, key=lambda b: b.offset)
            for i, x in enumerate(bufs):
                for y in bufs[i + 1:]:
                    if y.offset >= x.offset + x.size:
                        break
                    early, late = (x, y) if x.live[1] <= y.live[0] else (y, x)
                    if early.live[1] > late.live[0]:
                        continue  # both live: the allocator kept them apart
                    for d in users.get(late.id, ()):
                        deps.setdefault(d, set()).update(
                            u for u in users.get(early.id, ()) if u < d)


def _slot_id(plan: DispatchPlan, name: str, slot: int) -> str:
    return f"s{plan.site.index}.{name}.{slot}"


def _const_id(plan: DispatchPlan, k: int) -> str:
    return f"w{plan.site.index}.{k}"


def _i64(v: int) -> ir.Attribute:
    return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), v)


def _i64_array(vs) -> ir.Attribute:
    return ir.ArrayAttr.get([_i64(v) for v in vs])


def build_pass_manager(state: _State, passes: int = len(NPU_PASSES)) -> passmanager.PassManager:
    """The cleanup, then the first `passes` of NPU_PASSES."""
    pm = passmanager.PassManager.parse(f"builtin.module({CLEANUP})")
    fns = (state.legalize, state.tile, state.plan_memory, state.schedule)[:passes]
    for name, fn in zip(NPU_PASSES, fns):
        def run(op, pass_, fn=fn):
            if state.error is not None:
                return
            try:
                fn(op)
            except Exception as e:  # reported after pm.run, with its own message
                state.error = e
                pass_.signal_pass_failure()
        pm.add(run, name=name, argument=name, description=(fn.__doc__ or name))
    return pm


def pipeline_text() -> str:
    """The pipeline as MLIR prints it (it names our passes)."""
    with ir.Context():
        return str(build_pass_manager(_State(load_target(), False)))


def run_npu_pipeline(flow_module, target: NpuTarget | str | Path | None = None,
                     strict: bool = False, index: PhaseIndex | None = None) -> NpuProgram:
    """Run the NPU pipeline on a flow-phase module (text, path or ir.Module); `index`: the
    dispatch index of the same text, when the caller has it (a sweep runs one text many times)."""
    if not isinstance(target, NpuTarget):
        target = load_target(target)
    ctx = None
    source = None
    if isinstance(flow_module, ir.Module):
        module = flow_module
        text = module.operation.get_asm(enable_debug_info=True)
    else:
        text = flow_module
        if isinstance(flow_module, Path) or (isinstance(flow_module, str) and "\n" not in flow_module
                                             and Path(flow_module).exists()):
            source = str(flow_module)
            text = read_text(flow_module)  # BadFile names the file and byte offset
        ctx = mlir_context()
        try:
            module = ir.Module.parse(text, ctx)
        except ir.MLIRError as e:
            line, col, message = first_diagnostic(e)
            raise NpuError(f"cannot parse: {message}", source, line=line, col=col) from None
    # The dispatch index of the same text: the NPU's kinds, symbols and ONNX
    # nodes are its records' (one dispatch model for the table and the NPU).
    state = _State(target, strict, index or index_text(text, "flow", source))
    try:
        return _run_passes(module, state)
    except NpuError as e:
        if e.path is None and source is not None:
            raise NpuError(e.message, source) from None
        raise


def _run_passes(module, state, passes: int = len(NPU_PASSES)):
    with module.context:
        pm = build_pass_manager(state, passes)
        try:
            pm.run(module.operation)
        except ir.MLIRError:
            if state.error is None:
                raise
        if state.error is not None:
            if isinstance(state.error, (NpuError, BackendError)):  # already one line naming it
                raise state.error
            raise NpuError(f"{type(state.error).__name__}: {state.error}") from state.error
    state.program_module = module
    return state.program
