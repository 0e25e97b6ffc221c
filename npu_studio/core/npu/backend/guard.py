"""Every hook of a backend behind one guard: a failure in a third party's code is one line naming it.

A hook that raises becomes a `BackendError` naming the backend, the hook and (when known) the
entry point it came from. What a hook returns is checked too, where the rest of NPU Studio
would otherwise fail far from the cause: the emitter must return an `Emitted` whose tags point
into its own text, binary and program; the cost hook a whole, non-negative number of cycles;
the runner a `RunResult`.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import numbers
import threading

from ...run import time_budget
from ..target.target import TargetError
from .api import Backend, BackendError, DispatchCall, Emitted, EmittedLine, NoTileFits, RunResult
from .rules import Rule, RuleSet

MAX_TILE_CYCLES = 1 << 48  # one tile's compute step: more is a unit mix-up, not a cost


def said(e: BaseException) -> str:
    text = " ".join(str(e).split())
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


def _fail(backend: str, origin: str, reason: str) -> BackendError:
    return BackendError(backend, reason + (f" (entry point {origin})" if origin else ""))


def _guard(backend: str, origin: str, hook: str, fn, passes: tuple[type[BaseException], ...] = ()):
    @functools.wraps(fn)
    def call(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except passes:
            raise
        except (BackendError, TargetError):
            raise
        except Exception as e:
            raise _fail(backend, origin, f"{hook} raised {said(e)}") from None
    return call


def _shown(value) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _checked_cycles(backend: str, origin: str, fn):
    guarded_fn = _guard(backend, origin, "tile_cycles", fn)

    @functools.wraps(fn)
    def call(*args, **kwargs):
        got = guarded_fn(*args, **kwargs)
        if isinstance(got, float) and math.isfinite(got) and got.is_integer():
            got = int(got)
        if isinstance(got, bool) or not isinstance(got, numbers.Integral) or not 0 <= got <= MAX_TILE_CYCLES:
            raise _fail(backend, origin, f"tile_cycles returned {_shown(got)}, not a whole number of cycles "
                                         f"from 0 to {MAX_TILE_CYCLES:,}")
        return int(got)
    return call


def check_emitted(emitted, program) -> str | None:
    """Why `emitted` is not a usable emitter output for `program` (None: it is)."""
    if not isinstance(emitted, Emitted):
        return f"returned {type(emitted).__name__}, not an Emitted"
    if not isinstance(emitted.assembly, str):
        return f"returned an assembly of type {type(emitted.assembly).__name__}, not text (str)"
    if not isinstance(emitted.binary, (bytes, bytearray)):
        return f"returned a binary of type {type(emitted.binary).__name__}, not bytes"
    if not isinstance(emitted.lines, (tuple, list)):
        return f"returned lines of type {type(emitted.lines).__name__}, not a tuple of EmittedLine"
    n_lines, n_bytes = len(emitted.assembly.splitlines()), len(emitted.binary)
    dispatches = {d.index for d in program.dispatches}
    task_dispatch = {t.id: t.dispatch for t in program.tasks}
    for i, tag in enumerate(emitted.lines):
        where = f"lines[{i}]"
        if not isinstance(tag, EmittedLine):
            return f"{where} is a {type(tag).__name__}, not an EmittedLine"
        if not _whole(tag.line) or not 1 <= tag.line <= n_lines:
            return f"{where} names text line {_shown(tag.line)}; the assembly has {n_lines} lines"
        if tag.dispatch not in dispatches:
            return f"{where} (line {tag.line}) names dispatch {_shown(tag.dispatch)}; the program has none such"
        if tag.task is not None and task_dispatch.get(tag.task) != tag.dispatch:
            return f"{where} (line {tag.line}) names task {_shown(tag.task)}, not a task of dispatch {tag.dispatch}"
        if not (_whole(tag.offset) and _whole(tag.size) and tag.offset >= 0 and tag.size >= 0
                and tag.offset + tag.size <= n_bytes):
            return (f"{where} (line {tag.line}) names bytes {_shown(tag.offset)}+{_shown(tag.size)}; "
                    f"the binary has {n_bytes:,}")
    return None


def _whole(v) -> bool:
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


def _checked_emit(backend: str, origin: str, fn):
    guarded_fn = _guard(backend, origin, "emit", fn)

    @functools.wraps(fn)
    def call(program):
        emitted = guarded_fn(program)
        why = check_emitted(emitted, program)
        if why is not None:
            raise _fail(backend, origin, f"emit {why}")
        return emitted
    return call


class _GuardedRunner:
    def __init__(self, backend: str, origin: str, runner):
        self.inner = runner
        self._run = _guard(backend, origin, "runner.run", runner.run)
        self.backend, self.origin = backend, origin

    def run(self, call: DispatchCall) -> RunResult:
        result = self._within_limit(call)
        if not isinstance(result, RunResult):
            raise _fail(self.backend, self.origin, f"runner.run returned {type(result).__name__}, not a RunResult")
        if result.cycles is not None and (not _whole(result.cycles) or result.cycles < 0):
            raise _fail(self.backend, self.origin, f"runner.run measured {_shown(result.cycles)} cycles, not a "
                                                   "whole number from 0")
        return result


    def _within_limit(self, call: DispatchCall):
        """The runner's answer, or one line once the dispatch's limit (run/time_budget) has passed.
        A runner that never answers (a board that hangs) is left behind on a daemon thread, which dies
        with the process: Python cannot stop a call in third-party code, only stop waiting for it."""
        d = next((d for d in call.program.dispatches if d.index == call.dispatch), None)
        limit = time_budget.npu_call_seconds(d.flops if d else 0, time_budget.array_bytes(call.arrays),
                                             d.num_tiles if d else 1)
        box: dict = {}

        def answer():
            try:
                box["result"] = self._run(call)
            except BaseException as e:  # handed to the caller's thread as it is
                box["error"] = e
        worker = threading.Thread(target=answer, name=f"{self.backend} runner", daemon=True)
        worker.start()
        worker.join(limit)
        if worker.is_alive():
            raise _fail(self.backend, self.origin, f"runner.run did not answer on dispatch #{call.dispatch} "
                                                   f"within {time_budget.seconds_text(limit)}")
        if "error" in box:
            raise box["error"]
        return box["result"]


def guarded(b: Backend, origin: str = "") -> Backend:
    """`b` with every hook wrapped: an exception in it, or a result that makes no sense, becomes a
    BackendError naming `b` and `origin` (its entry point); a tiling hook's NoTileFits, the
    expected "nothing fits", passes through."""
    if not all(isinstance(r, Rule) for r in b.rules):
        raise _fail(b.name, origin, "rules holds something that is not a Rule")
    rules = RuleSet([dataclasses.replace(r, check=_guard(b.name, origin, f"rule {r.id!r}", r.check))
                     for r in b.rules])
    return dataclasses.replace(
        b, rules=rules,
        tile_cycles=b.tile_cycles and _checked_cycles(b.name, origin, b.tile_cycles),
        choose_tiling=b.choose_tiling and _guard(b.name, origin, "choose_tiling", b.choose_tiling, (NoTileFits,)),
        emit=b.emit and _checked_emit(b.name, origin, b.emit),
        runner=b.runner and _GuardedRunner(b.name, origin, b.runner),
        loader=b.loader and _guard(b.name, origin, "loader", b.loader))
