"""Child-process entry: the NPU variant run by IREE's runtime, NPU dispatches computed by the functional simulator.

    python -m npu_studio.core.npu.hal.inprocess REQUEST.json

The request (written by `npu_run`) names the variant's vmfb, the plugin,
the flow snapshot, the NPU program, the inputs and an output folder. The
plugin is loaded twice by path, which gives one library: by IREE
(`--executable_plugin`) to resolve the imports, and by ctypes to register
the handler. IREE calls the handler from its worker thread with the
import's packed (base, offset) pairs; the handler views the real buffers
as arrays and runs the dispatch's flow function on them, its root op tile
by tile in task order (`DispatchInterpreter`). Calls are taken one at a
time. With a per-dispatch IREE build in the request, each call's operands
and results are kept on disk and, after the run, its results are compared
with IREE's CPU result of that dispatch on the same operands.

Writes OUT/output<i>.npy (through `run_vmfb`) and OUT/calls.json, one
record per plugin call in the order IREE made them.
"""

from __future__ import annotations

import ctypes
import json
import sys
import threading
import time
from pathlib import Path

import numpy as np

HANDLER_TYPE = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int64, ctypes.c_void_p)


class PluginHandler:
    """Computes one NPU dispatch on the buffers IREE passes to the plugin."""

    def __init__(self, request: dict):
        from iree.compiler import ir

        from ...ir.flow_graph import FlowGraph
        from ..program.npu_ir import NpuProgram
        from ..numerics.dispatch_eval import Tile
        from .variant import Variant

        self.ctx = ir.Context()
        self.ctx.enable_multithreading(False)
        self.ctx.allow_unregistered_dialects = True
        with self.ctx:
            module = ir.Module.parse(Path(request["flow"]).read_text(encoding="utf-8"))
        self.module = module  # keeps the functions alive
        self.graph = FlowGraph(module.operation)
        self.program = NpuProgram.load(request["program"])
        variant = Variant.load(Path(request["workspace"]))
        self.imports = {r.dispatch: r for r in variant.imports}
        self.tiles = {d: [Tile(t.tile_offsets, t.tile_sizes) for t in self.program.tasks_of(d)]
                      for d in self.imports}
        self.fault = request.get("fault")
        # Each call's operands and results are kept on disk and compared with IREE after the run: a
        # child process driven from inside IREE's worker thread can deadlock.
        self.dispatch_vmfb = request.get("dispatch_vmfb")
        self.kept = Path(request["out_dir"]) / "calls"
        self.calls: list[dict] = []
        self._lock = threading.Lock()
        self.error: str | None = None
        self.c_handler = HANDLER_TYPE(self._call)

    def _call(self, dispatch: int, params: int) -> int:
        # IREE may run independent dispatches on two workers at once; the NPU model takes one at a time
        # (one MLIR context, and calls numbered in the order they ran).
        with self._lock:
            try:
                self.calls.append(self.compute(dispatch, params))
                return 0
            except BaseException as exc:  # the runtime only sees the return code; keep the reason
                self.error = self.error or f"dispatch #{dispatch}: {' '.join(str(exc).split()) or type(exc).__name__}"
                return 1

    def arrays(self, dispatch: int, params: int) -> list[np.ndarray]:
        from ...run.dispatches.scalar_ops import numpy_dtype

        rec = self.imports[dispatch]
        # the import's arguments: the binding count, then (base, offset, bytes) per binding (replacement)
        words = (ctypes.c_uint64 * (1 + 3 * len(rec.bindings))).from_address(params)
        if words[0] != len(rec.bindings):
            raise RuntimeError(f"IREE passes {words[0]} bindings, the variant records {len(rec.bindings)}")
        out = []
        for i, b in enumerate(rec.bindings):
            base, offset = words[1 + 3 * i], words[2 + 3 * i]
            raw = (ctypes.c_char * b.nbytes).from_address(base + offset)
            out.append(np.frombuffer(raw, dtype=numpy_dtype(b.element)).reshape(b.shape))
        return out

    def compute(self, dispatch: int, params: int) -> dict:
        from ..numerics.dispatch_eval import DispatchInterpreter

        t0 = time.perf_counter()
        rec = self.imports[dispatch]
        arrays = self.arrays(dispatch, params)
        operands = [a.copy() for a, b in zip(arrays, rec.bindings) if b.access != "writeonly"]
        info = self.program.dispatches[dispatch]
        tiled = info.unit != "dma"  # a DMA transfer is one task: the whole body at once
        site = self.graph.sites[dispatch]
        with self.ctx:
            func = self.graph.func_of(site)
            interp = DispatchInterpreter(func, self.tiles[dispatch] if tiled else None, self._hook(dispatch))
            if tiled and tuple(interp.root_ranges()) != tuple(info.loop_ranges):
                raise RuntimeError(f"root op loops {interp.root_ranges()} differ from the program's {info.loop_ranges}")
            interp.run(arrays)
        seconds = time.perf_counter() - t0
        record = {"dispatch": dispatch, "symbol": info.symbol, "tiles": len(self.tiles[dispatch]) if tiled else 1,
                  "seconds": seconds, "max_error": None, "scale": None,
                  "dtype": next((a.dtype.name for a, b in zip(arrays, rec.bindings) if b.access != "readonly"), "")}
        if self.dispatch_vmfb:
            folder = self.kept / str(len(self.calls))
            folder.mkdir(parents=True)
            for i, a in enumerate(operands):
                np.save(folder / f"in{i}.npy", a)
            for j, a in enumerate(a for a, b in zip(arrays, rec.bindings) if b.access != "readonly"):
                np.save(folder / f"out{j}.npy", a)
        return record

    def compare(self) -> None:
        """Each call's results against IREE's CPU build of its dispatch on the same operands."""
        if not self.dispatch_vmfb or not self.calls:
            return

        def arrays(k: int):
            folder = self.kept / str(k)
            operands = [np.load(p) for p in sorted(folder.glob("in*.npy"), key=_ordinal)]
            ours = [np.load(p) for p in sorted(folder.glob("out*.npy"), key=_ordinal)]
            for p in folder.iterdir():
                p.unlink()
            folder.rmdir()
            return operands, ours
        compare_calls(Path(self.dispatch_vmfb), self.calls, arrays)

    def _hook(self, dispatch: int):
        f = self.fault
        if not f or f["dispatch"] != dispatch:
            return None

        def hook(k, regions):
            if k == f["tile"]:
                for r in regions:
                    r += np.asarray(f.get("delta", 1.0)).astype(r.dtype)
        return hook



def compare_calls(dispatch_vmfb: Path, records: list[dict], arrays) -> None:
    """Sets each record's max_error and scale: its results against IREE's CPU build of its dispatch
    on the same operands. `arrays(k)` gives call k's (operands, results)."""
    from ..numerics.functional_sim import max_error
    from ...run.dispatches.iree_dispatches import DispatchRunner

    with DispatchRunner(Path(dispatch_vmfb)) as runner:
        for k, record in enumerate(records):
            operands, ours = arrays(k)
            err, scale = 0.0, 0.0
            for a, r in zip(ours, runner.run(record["dispatch"], operands)):
                e, s = max_error(a, r)
                err, scale = max(err, e), max(scale, s)
            record["max_error"], record["scale"] = err, scale


def _ordinal(path: Path) -> int:
    return int(path.stem.lstrip("inout"))


def main(argv: list[str]) -> int:
    import iree.runtime as rt

    from ...run import run_vmfb

    request = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    out = Path(request["out_dir"])
    plugin = str(request["plugin"])
    rt.flags.parse_flags(f"--executable_plugin={plugin}")
    lib = ctypes.CDLL(plugin)
    handler = PluginHandler(request)
    lib.npu_plugin_set_handler.argtypes = [HANDLER_TYPE]
    lib.npu_plugin_calls.restype = ctypes.c_long
    lib.npu_plugin_set_handler(handler.c_handler)
    args = [request["vmfb"], request["function"], str(out), *request["inputs"]]
    if request.get("parameters"):
        args.append(f"--parameters={request['parameters']}")
    code, failure = 1, None
    try:
        code = run_vmfb.main(args)
    except Exception as exc:  # the runtime's error for a failed dispatch; the handler knows which
        failure = " ".join(str(exc).split())[:300]
    finally:
        lib.npu_plugin_set_handler(HANDLER_TYPE(0))
    if not (handler.error or failure):
        handler.compare()
    report = {"calls": handler.calls, "plugin_calls": int(lib.npu_plugin_calls()), "error": handler.error,
              "failure": failure}
    (out / "calls.json").write_text(json.dumps(report), encoding="utf-8")
    if handler.error or failure:
        print(handler.error or failure, file=sys.stderr)
        return 1
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
