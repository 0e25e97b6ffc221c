"""Child-process entry: the NPU variant run by IREE's runtime, NPU dispatches computed by the functional simulator.

    python -m npu_studio.core.npu.hal.inprocess REQUEST.json

The request (written by `npu_run`) names the variant's vmfb, the plugin,
the flow snapshot, the NPU program, the inputs and an output folder. The
plugin is loaded twice by path, which gives one library: by IREE
(`--executable_plugin`) to resolve the imports, and by ctypes to register
the handler. IREE calls the handler from its worker thread with the
import's packed (base, offset) pairs; the handler views the real buffers
as arrays and hands them to the backend's runner (`backend.api.Runner`),
with the dispatch's flow function as the shared model of its body (the
generic NPU's runner computes its root op tile by tile in task order). Calls are taken one at a
time. With a per-dispatch IREE build in the request, each call's operands
and results are kept on disk and, after the run, its results are compared
with IREE's CPU result of that dispatch on the same operands.

A dispatch inside a `util.initializer` runs while IREE loads the module,
and IREE's Python binding holds Python's lock (the GIL) through the load:
a handler in Python would wait for that lock forever. So the module is
loaded before the handler is registered, and the plugin computes those
calls with its C interpreter (its standalone mode, from the variant's
program binary) on the same buffers; they are checked against
IREE the same way.

Every call writes a line as it starts and one as it ends to the call log
(`call_log`), which the parent reads to hold each call to its dispatch's
time limit. Writes OUT/output<i>.npy (through `run_vmfb`) and
OUT/calls.json, one record per plugin call in the order IREE made them.
"""

from __future__ import annotations

import ctypes
import json
import os
import sys
import threading
import time
from pathlib import Path

import numpy as np

from . import call_log
from .call_check import compare_calls

HANDLER_TYPE = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int64, ctypes.c_void_p)
COMPUTED_BY = "npu-plugin"  # the functional simulator behind the handler
COMPUTED_BY_C = "npu-plugin-c"  # the plugin's C interpreter (calls made while IREE loads the module)


class PluginHandler:
    """Computes one NPU dispatch on the buffers IREE passes to the plugin."""

    def __init__(self, request: dict):
        from iree.compiler import ir

        from ...ir.flow_graph import FlowGraph
        from ..program.npu_ir import NpuProgram
        from ..backend.registry import backend_of
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
        self.backend = backend_of(self.program.target)
        self.binary = Path(request["binary"]).read_bytes() if request.get("binary") else None  # the parent emitted it
        self.fault = request.get("fault")
        self.log = Path(request["log"])
        self.first_call = 0  # the calls made while loading (by the C interpreter) come first
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
            call = self.first_call + len(self.calls)
            self._log(call_log.begin_line(call, dispatch))
            if self.fault and self.fault.get("hang") and self.fault["dispatch"] == dispatch:
                threading.Event().wait()  # the fault hook's call that never returns (tests)
            try:
                record = self.compute(dispatch, params)
            except BaseException as exc:  # the runtime only sees the return code; keep the reason
                self.error = self.error or f"dispatch #{dispatch}: {' '.join(str(exc).split()) or type(exc).__name__}"
                return 1
            self.calls.append(record)
            self._log(call_log.end_line(call, dispatch, record["tiles"], record["seconds"]))
            return 0

    def _log(self, line: str) -> None:
        with open(self.log, "a", encoding="utf-8") as f:
            f.write(line)

    def load_time_dispatches(self) -> list[int]:
        """The NPU dispatches inside a `util.initializer`: IREE runs them while it loads the module."""
        found = []
        for d in sorted(self.imports):
            op = self.graph.sites[d].op.operation
            while op is not None and op.name not in ("util.initializer", "util.func", "func.func"):
                op = op.parent
            if op is not None and op.name == "util.initializer":
                found.append(d)
        return found

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
        from ..backend.api import DispatchCall
        from ..numerics.dispatch_eval import DispatchInterpreter, Tile

        t0 = time.perf_counter()
        rec = self.imports[dispatch]
        arrays = self.arrays(dispatch, params)
        operands = [a.copy() for a, b in zip(arrays, rec.bindings) if b.access != "writeonly"]
        info = self.program.dispatches[dispatch]
        tiled = info.unit != "dma"  # a DMA transfer is one task: the whole body at once
        site = self.graph.sites[dispatch]

        def body(tiles) -> None:
            with self.ctx:
                func = self.graph.func_of(site)
                interp = DispatchInterpreter(func, [Tile(t.offsets, t.sizes) for t in tiles]
                                             if tiled and tiles is not None else None, self._hook(dispatch))
                if tiled and tiles is not None and tuple(interp.root_ranges()) != tuple(info.loop_ranges):
                    raise RuntimeError(f"root op loops {interp.root_ranges()} differ from the program's {info.loop_ranges}")
                interp.run(arrays)
        run = self.backend.runner.run(DispatchCall(self.program, dispatch, arrays, body, self.binary, tiled))
        seconds = time.perf_counter() - t0
        record = {"dispatch": dispatch, "symbol": info.symbol, "tiles": run.tiles if tiled else 1,
                  "cycles": run.cycles, "seconds": seconds, "max_error": None, "scale": None, "computed_by": COMPUTED_BY,
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



def _ordinal(path: Path) -> int:
    return int(path.stem.lstrip("inout"))


def _load_time_environment(request: dict, handler: PluginHandler, out: Path) -> str | None:
    """Points the plugin's C interpreter at the variant for the calls made while loading; the line
    naming a load-time dispatch it cannot compute, if any."""
    from .exec_binary import load_program
    from .exec_desc import ENV_DUMP, ENV_FAULT, ENV_LOG, ENV_PATH

    described = load_program(Path(request["exec"]))
    for d in handler.load_time_dispatches():
        desc = described.of(d)
        if desc is None or desc.reason:
            why = desc.reason if desc is not None else "it is not described; build the variant again"
            return (f"dispatch #{d} {handler.program.dispatches[d].symbol} runs inside an initializer, while IREE "
                    f"loads the module, where only the plugin's C interpreter can compute it, and it cannot: {why}")
    os.environ[ENV_PATH] = request["exec"]
    os.environ[ENV_LOG] = str(handler.log)
    if request.get("dispatch_vmfb"):
        (out / "load_calls").mkdir(exist_ok=True)
        os.environ[ENV_DUMP] = str(out / "load_calls")
    f = request.get("fault")
    if f:
        os.environ[ENV_FAULT] = f"{f['dispatch']}:hang" if f.get("hang") else \
            f"{f['dispatch']}:{f['tile']}:{float(f.get('delta', 1.0))!r}"
    return None


def _load_time_records(request: dict, out: Path) -> list[dict]:
    """The calls the C interpreter made while IREE loaded the module, as the handler records them."""
    from .exec_binary import load_program
    from .call_check import records_from_log
    from .variant import Variant

    variant = Variant.load(Path(request["workspace"]))
    return [{**r, "computed_by": COMPUTED_BY_C}
            for r in records_from_log(variant, load_program(Path(request["exec"])), Path(request["log"]))]


def _compare_load_time(request: dict, out: Path, records: list[dict]) -> None:
    from .call_check import call_arrays
    from .variant import Variant

    if request.get("dispatch_vmfb") and records:
        variant = Variant.load(Path(request["workspace"]))
        compare_calls(Path(request["dispatch_vmfb"]), records,
                      lambda k: call_arrays(variant, out / "load_calls", records[k]))


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
    code, failure, loaded = 1, _load_time_environment(request, handler, out), []
    if failure is None:
        try:
            module = run_vmfb.load(request["vmfb"], request.get("parameters"))  # no handler yet: see the doc
            loaded = _load_time_records(request, out)
            handler.first_call = len(loaded)
            lib.npu_plugin_set_handler(handler.c_handler)
            code = run_vmfb.call(module, request["vmfb"], request["function"], str(out), request["inputs"])
        except Exception as exc:  # the runtime's error for a failed dispatch; the handler knows which
            failure = " ".join(str(exc).split())[:300]
        finally:
            lib.npu_plugin_set_handler(HANDLER_TYPE(0))
    if not (handler.error or failure):
        _compare_load_time(request, out, loaded)
        handler.compare()
    report = {"calls": loaded + handler.calls, "plugin_calls": int(lib.npu_plugin_calls()), "error": handler.error,
              "failure": failure}
    (out / "calls.json").write_text(json.dumps(report), encoding="utf-8")
    if handler.error or failure:
        print(handler.error or failure, file=sys.stderr)
        return 1
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
