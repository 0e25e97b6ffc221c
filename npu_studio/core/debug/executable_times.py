"""Which executable is slow to compile: each dumped executable source compiled on its own.

As IREE's guide to compile-time problems does, every `hal.executable` source
the build dumped (executables/sources/, core/executables/catalog.py) is
compiled alone with `--compile-mode=hal-executable`, the build's backend and
extra flags, several at once (`jobs`, the machine's cores) and each under a
timeout, so one that hangs is named instead of stalling the whole compile.
The times are kept in the workspace (profiles/<build>.executables.json) for
the Executables view, until the build changes.
"""

from __future__ import annotations

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Callable

from ..compile.options import target_flags
from ..errors import BadFile, Cancelled, StudioError
from ..textio import parse_json, read_bytes
from .compile_profile import PROFILES_DIR, publish_record, run_cancellable, stamp_of

OK, TIMEOUT, FAILED = "ok", "timeout", "failed"


@dataclass
class ExecutableTime:
    name: str
    seconds: float | None  # wall time of its compile; None when it timed out or failed
    status: str  # ok, timeout, failed
    dispatches: list[str] = field(default_factory=list)  # "#3"
    nodes: list[str] = field(default_factory=list)  # ONNX node names
    source: str = ""
    reason: str = ""  # one line for a timeout or a failure
    object_bytes: int = 0


@dataclass
class ExecutableTimes:
    build: str
    times: list[ExecutableTime]  # slowest first: timeouts, then by seconds, then failures
    build_stamp: str
    jobs: int
    timeout: float
    wall_seconds: float

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> "ExecutableTimes":
        return cls(**{**data, "times": [ExecutableTime(**t) for t in data["times"]]})

    def by_name(self) -> dict[str, ExecutableTime]:
        return {t.name: t for t in self.times}


def times_file(build_name: str) -> Path:
    return Path(PROFILES_DIR) / f"{build_name}.executables.json"


def load_times(ws, build_name: str = "main") -> ExecutableTimes | None:
    """The kept per-executable times of a build, or None when none are kept or the build changed."""
    from ..workspace.variants import resolve

    path = ws.root / times_file(build_name)
    if not path.exists():  # a folder in its place is named below, as unreadable
        return None
    try:
        times = ExecutableTimes.from_json(parse_json(read_bytes(path), path, "a record of executable compile times"))
    except (ValueError, KeyError, TypeError, AttributeError) as exc:  # malformed or mistyped JSON
        raise BadFile(path, f"not a record of executable compile times ({exc}); delete it") from None
    return times if times.build_stamp == stamp_of(resolve(ws, build_name)) else None


class ExecutableTimesJob:
    """`run()` blocks and returns ExecutableTimes; `cancel()` from any thread.

    `timeout` is the seconds allowed to each executable; `timeouts` overrides
    it for named executables. `on_progress(done, total)` after each one.
    """

    def __init__(self, ws, build_name: str = "main", *, timeout: float = 120.0, jobs: int = 2,
                 timeouts: dict[str, float] | None = None,
                 on_progress: Callable[[int, int], None] | None = None):
        from ..workspace.variants import options_for, resolve

        if not timeout > 0:
            raise StudioError(None, f"--timeout must be more than 0 seconds, got {timeout:g}")
        if jobs < 1:
            raise StudioError(None, f"--jobs must be at least 1, got {jobs}")
        self.ws, self.build_name = ws, build_name
        self.build = resolve(ws, build_name)
        options = options_for(ws, build_name)
        own = set(ws.substitution_flags())  # substitutions name executables of the whole module, not one
        self.flags = [*target_flags(options.target), *(f for f in options.extra_flags if f not in own)]
        self.compiler = options.compiler
        self.timeout, self.jobs, self.timeouts = timeout, jobs, dict(timeouts or {})
        self.on_progress = on_progress
        self._cancel = threading.Event()

    def cancel(self) -> None:
        self._cancel.set()

    def executables(self):
        from ..executables.catalog import list_executables

        view = SimpleNamespace(root=self.build.folder, snapshot_path=self._snapshot)
        return list_executables(view)

    def _snapshot(self, phase: str) -> Path:
        path = self.build.snapshot_path(phase)
        return path if path is not None else self.build.folder / "phases" / f"missing-{phase}.mlir"

    def run(self) -> ExecutableTimes:
        infos = self.executables()
        result: list[ExecutableTime] = []

        def measure(staging: Path) -> str:
            start = time.perf_counter()
            done = [0]
            lock = threading.Lock()

            def one(info) -> ExecutableTime:
                t = self._compile_one(info, staging)
                with lock:
                    done[0] += 1
                    if self.on_progress is not None:
                        self.on_progress(done[0], len(infos))
                return t

            with ThreadPoolExecutor(max_workers=self.jobs) as pool:
                result.extend(pool.map(one, infos))
            if self._cancel.is_set():
                raise Cancelled("executable compile times")
            order = {TIMEOUT: 0, OK: 1, FAILED: 2}
            result.sort(key=lambda t: (order[t.status], -(t.seconds or 0.0), t.name))
            times = ExecutableTimes(self.build_name, result, stamp_of(self.build), self.jobs, self.timeout,
                                    round(time.perf_counter() - start, 6))
            self._times = times
            return json.dumps(times.to_json(), indent=1)

        publish_record(self.ws, times_file(self.build_name), measure, build_name=self.build_name,
                       stamp=stamp_of(self.build))
        return self._times

    def _compile_one(self, info, staging: Path) -> ExecutableTime:
        from ..compile import toolchain

        entry = ExecutableTime(info.name, None, FAILED, [f"#{d}" for d in info.dispatches], list(info.onnx_nodes),
                               str(info.source))
        if self._cancel.is_set():
            entry.reason = "cancelled"
            return entry
        work = staging / f"exe{abs(hash(info.name))}"
        work.mkdir()
        obj = work / "out.so"
        cmd = [str(self.compiler or toolchain.iree_compile()), str(info.source), *self.flags,
               "--compile-mode=hal-executable", "-o", str(obj)]
        limit = self.timeouts.get(info.name, self.timeout)
        t0 = time.perf_counter()
        code, stderr = run_cancellable(cmd, work / "stderr.log", self._cancel, timeout=limit, poll=min(0.05, limit))
        seconds = time.perf_counter() - t0
        if code is None:
            entry.status = TIMEOUT if not self._cancel.is_set() else FAILED
            entry.reason = f"no result within {limit:g} s; stopped" if entry.status == TIMEOUT else "cancelled"
        elif code != 0:
            lines = [ln.strip() for ln in stderr.splitlines() if "error:" in ln] or \
                    [ln.strip() for ln in stderr.splitlines() if ln.strip()]
            entry.reason = lines[0] if lines else f"iree-compile exited {code}"
        else:
            entry.status, entry.seconds = OK, round(seconds, 6)
            entry.object_bytes = obj.stat().st_size if obj.is_file() else 0
        return entry


def slowest(times: ExecutableTimes) -> ExecutableTime | None:
    ok = [t for t in times.times if t.status != FAILED]
    return ok[0] if ok else None
