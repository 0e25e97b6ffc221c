"""Which of the flags two builds differ in makes the difference: delta debugging over flag sets.

Build A has flags FA, build B flags FB (core/workspace/variants.py; `main` has
none of its own). The changes from A to B are the flags B adds and the flags
it drops. `bisect_flags` looks for the smallest set of those changes that,
applied to A's flags, still differs from A as B does: in outputs beyond
`tolerance` (max absolute difference on the same inputs), or in compile time
beyond `seconds` (when given). It uses Zeller's ddmin: the changes are split
into n parts, a part or a part's complement that still differs is kept, and
n doubles when neither does; the result is 1-minimal (dropping any single
change of it loses the difference).

Every trial is a full compile from the imported model into a scratch folder
inside a staging folder of the workspace (held locked): nothing is published,
and the workspace is left as it was, whatever happens.
"""

from __future__ import annotations

import shutil
import threading
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ..compile.compiler import CompileJob
from ..errors import Cancelled, StudioError
from ..run.runner import pick_function, random_inputs, run_vmfb
from ..workspace.variants import MAIN, get, options_for


@dataclass
class Trial:
    changes: list[str]  # "+FLAG" added to A's flags, "-FLAG" dropped from them
    seconds: float
    max_abs: float  # against A's outputs
    differs: bool


@dataclass
class BisectResult:
    a: str
    b: str
    changes: list[str]  # every change from A to B
    culprit: list[str]  # the smallest set found that still differs
    criterion: str
    trials: list[Trial] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"a": self.a, "b": self.b, "changes": self.changes, "culprit": self.culprit,
                "criterion": self.criterion,
                "trials": [t.__dict__ for t in self.trials]}


def flag_changes(ws, a: str, b: str) -> tuple[list[str], list[str], str | None]:
    """(A's flags, the changes from A to B, the compiler both use)."""
    va = None if a == MAIN else get(ws, a)
    vb = None if b == MAIN else get(ws, b)
    for v in (va, vb):
        if v is not None:
            options_for(ws, v.name)  # a trusted workspace; its flags and compiler checked again (variants.py)
    fa, fb = (va.flags if va else []), (vb.flags if vb else [])
    ca, cb = (va.compiler if va else None), (vb.compiler if vb else None)
    if ca != cb:
        raise StudioError(ws.root, f"{a} and {b} use different compilers; flags can only be bisected with one")
    changes = [f"+{f}" for f in fb if f not in fa] + [f"-{f}" for f in fa if f not in fb]
    return list(fa), changes, ca


def apply(flags: list[str], changes: list[str]) -> list[str]:
    dropped = {c[1:] for c in changes if c.startswith("-")}
    return [f for f in flags if f not in dropped] + [c[1:] for c in changes if c.startswith("+")]


def ddmin(changes: list[str], differs: Callable[[list[str]], bool]) -> list[str]:
    """A 1-minimal subset of `changes` for which `differs` holds (it must hold for all of them)."""
    n = 2
    while len(changes) >= 2:
        size = -(-len(changes) // n)
        parts = [changes[i:i + size] for i in range(0, len(changes), size)]
        for part in parts:
            if differs(part):
                changes, n = part, 2
                break
        else:
            for part in parts:
                rest = [c for c in changes if c not in part]
                if rest and differs(rest):
                    changes, n = rest, max(n - 1, 2)
                    break
            else:
                if n >= len(changes):
                    break
                n = min(len(changes), n * 2)
    return changes


class BisectJob:
    """`run()` blocks and returns a BisectResult; `cancel()` from any thread; `on_trial(trial)` after each build."""

    def __init__(self, ws, a: str, b: str, *, tolerance: float = 0.0, seconds: float | None = None, seed: int = 0,
                 on_trial: Callable[[Trial], None] | None = None):
        if tolerance < 0 or (seconds is not None and seconds <= 0):
            raise StudioError(None, "the tolerance must be at least 0 and the time threshold more than 0 s")
        self.ws, self.a, self.b = ws, a, b
        self.base_flags, self.changes, self.compiler = flag_changes(ws, a, b)
        if not self.changes:
            raise StudioError(ws.root, f"{a} and {b} have the same flags; nothing to bisect")
        self.tolerance, self.seconds, self.seed, self.on_trial = tolerance, seconds, seed, on_trial
        self._cancel = threading.Event()
        self._job: CompileJob | None = None

    def cancel(self) -> None:
        self._cancel.set()
        job = self._job
        if job is not None:
            job.cancel()

    @property
    def criterion(self) -> str:
        out = f"outputs differ by more than {self.tolerance:g}"
        return out + (f" or compile time by more than {self.seconds:g} s" if self.seconds is not None else "")

    def run(self) -> BisectResult:
        ws = self.ws
        result = BisectResult(self.a, self.b, list(self.changes), [], self.criterion)
        with ws.transaction() as txn:  # locked throughout: no compile changes the workspace under the trials
            sig = pick_function(ws.snapshot_path("input"))
            self._function, self._inputs = sig.name, random_inputs(sig, self.seed)
            self._staging, self._count = txn.staging, 0  # the trials' builds; removed with the transaction
            base_seconds, self._base = self._build([])
            self._base_seconds = base_seconds
            cache: dict[frozenset, bool] = {}

            def differs(changes: list[str]) -> bool:
                key = frozenset(changes)
                if key not in cache:
                    seconds, outputs = self._build(changes)
                    max_abs = max((float(np.max(np.abs(x.astype(np.float64) - y.astype(np.float64))))
                                   if x.shape == y.shape else float("inf")
                                   for x, y in zip(self._base, outputs)), default=0.0)
                    slower = self.seconds is not None and abs(seconds - self._base_seconds) > self.seconds
                    trial = Trial(list(changes), round(seconds, 4), max_abs, max_abs > self.tolerance or slower)
                    result.trials.append(trial)
                    if self.on_trial is not None:
                        self.on_trial(trial)
                    cache[key] = trial.differs
                return cache[key]

            if not differs(self.changes):
                raise StudioError(ws.root, f"{self.b} does not differ from {self.a} ({self.criterion}); "
                                           "nothing to bisect")
            result.culprit = ddmin(list(self.changes), differs)
        return result

    def _build(self, changes: list[str]) -> tuple[float, list[np.ndarray]]:
        if self._cancel.is_set():
            raise Cancelled("flag bisection")
        self._count += 1
        folder = self._staging / f"trial{self._count}"
        options = self.ws.compile_options().with_(compiler=self.compiler)
        options = options.with_(extra_flags=(*options.extra_flags, *apply(self.base_flags, changes)))
        self._job = CompileJob(self.ws.imported_path, folder, options, display_path=self.ws.user_model_path,
                               keep_dir=folder)
        t0 = time.perf_counter()
        result = self._job.run()
        seconds = time.perf_counter() - t0
        outputs = run_vmfb(result.vmfb, self._function, self._inputs, parameters=self.ws.params_path)
        shutil.rmtree(folder, ignore_errors=True)
        return seconds, outputs
