"""Where the compiler spends its time: per-pass times of every phase of a build.

`--mlir-timing` reports one tree of timers for a whole `iree-compile` run,
and MLIR merges the timers of every nested pipeline on the same operation
name (`'util.func' Pipeline`, ...) across the whole run: one run cannot tell
which phase a pass ran in. So the profile compiles each phase of a build on
its own, from the snapshot before it (`--compile-from`/`--compile-to`, the
same flags, snapshot dump and debug info as the build), with
`--mlir-timing --mlir-timing-display=tree --mlir-output-format=json`. That is
a second compile, not a free add-on to the first, so it is made on request
(docs/PERFORMANCE.md has the cost).

Reading a phase's tree (`phase_profile`):

- a pass's time is its self time: its wall (and user) time minus that of
  the timers nested in it, so nothing is counted twice;
- IREE runs some pipelines from inside a pass (`OpPipelineAdaptorPass`,
  `TranslateAllExecutablesPass`, ...) and MLIR files their timers at the top
  of the tree instead of under that pass, which then counts their time twice
  (MLIR's `Rest` line goes negative by exactly that much). Each such top-level
  pipeline's time is taken out of the latest such pass before it (by name:
  `_HOSTS`), until the double count is used up; MLIR merges same-named
  pipelines into the first one's timer, so what is left of the double count
  comes out of the hosts with most time left;
- what the compiler spent outside any pass (MLIR's positive `Rest`) is kept
  as `outside_wall`, never spread over passes. (MLIR prints one `Rest`: when
  a double count and time outside passes are both there, only their
  difference shows, and the profile sees the larger of the two.)
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

from .. import processes
from ..errors import BadFile, Cancelled, CompileFailed, WorkspaceError
from ..textio import read_text
from ..workspace.variants import PROFILES_DIR

PIPELINE_SUFFIX = " Pipeline"
_REPORT_START = re.compile(r'^\[\s*$\n^\{"(user|wall)"', re.M)
# Passes that run pipelines of their own (IREE's dynamic pass pipelines), whose timers MLIR files at the top.
_HOSTS = re.compile(r"Adaptor|PipelinePass$|FixedPointIterator|(Translate|Serialize|Configure|Link)(All|Target)?\w*Executable"
                    r"|LowerExecutable|JitGlobals|InlinerPass")
# Timer-matching tolerance: the compiler prints four decimals.
_EPS = 2e-4


@dataclass
class PassTime:
    name: str
    wall: float
    user: float
    instances: int = 1  # timers with this name in the phase (a pass added to the pipeline N times)


@dataclass
class PhaseProfile:
    phase: str
    total_wall: float  # the compiler's own total for the phase run
    total_user: float
    passes: list[PassTime]  # by name, most wall time first
    outside_wall: float = 0.0  # in the run but in no pass
    command: list[str] = field(default_factory=list)

    @property
    def pass_wall(self) -> float:
        return sum(p.wall for p in self.passes)

    def share(self, p: PassTime) -> float:
        return p.wall / self.total_wall if self.total_wall > 0 else 0.0

    def top(self, n: int = 5) -> list[PassTime]:
        return self.passes[:n]


@dataclass
class BuildProfile:
    build: str  # `main` or a variant's name
    phases: dict[str, PhaseProfile]
    build_stamp: str  # which build it profiled (stamp_of); stale when the build changed
    recorded: float = 0.0

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1)

    @classmethod
    def from_json(cls, text: str) -> "BuildProfile":
        data = json.loads(text)
        phases = {k: PhaseProfile(**{**v, "passes": [PassTime(**p) for p in v["passes"]]})
                  for k, v in data["phases"].items()}
        return cls(data["build"], phases, data["build_stamp"], data.get("recorded", 0.0))

    def by_name(self) -> list[tuple[str, PassTime]]:
        """Every pass of every phase: (phase, pass), most wall time first."""
        rows = [(ph, p) for ph, prof in self.phases.items() for p in prof.passes]
        return sorted(rows, key=lambda r: -r[1].wall)


# -- reading the compiler's timing report --------------------------------------


def timing_report(stderr: str) -> list[dict]:
    """The JSON timer list `--mlir-output-format=json` prints at the end of stderr (after any diagnostics)."""
    starts = list(_REPORT_START.finditer(stderr))
    if not starts:
        raise ValueError("no --mlir-timing report in the compiler's output")
    text = stderr[starts[-1].start():]
    text = text[: text.rindex("]") + 1]
    return [e for e in json.loads(text) if e]  # the printer pads each nested list with {}


def phase_profile(phase: str, report: list[dict], command: list[str] | None = None) -> PhaseProfile:
    """Self times by pass name for one phase run's timer tree (see the module docstring)."""
    top = [e for e in report if e.get("name") not in ("Rest", "Total")]
    total = next(e for e in report if e.get("name") == "Total")
    total_wall, total_user = _dur(total, "wall"), _dur(total, "user")
    nodes: list[_Node] = []
    _account(top, total_wall, nodes)
    by_name: dict[str, PassTime] = {}
    for n in nodes:
        pt = by_name.setdefault(n.name, PassTime(n.name, 0.0, 0.0, 0))
        pt.wall += max(0.0, n.self_wall)
        pt.user += max(0.0, n.self_user)
        pt.instances += 1
    passes = sorted(by_name.values(), key=lambda p: (-p.wall, p.name))
    for p in passes:
        p.wall, p.user = round(p.wall, 6), round(p.user, 6)
    outside = max(0.0, total_wall - sum(p.wall for p in passes))
    return PhaseProfile(phase, total_wall, total_user, passes, round(outside, 6), list(command or []))


@dataclass
class _Node:
    name: str
    self_wall: float
    self_user: float

    @property
    def is_pipeline(self) -> bool:
        return self.name.endswith(PIPELINE_SUFFIX)

    @property
    def is_host(self) -> bool:
        return not self.is_pipeline and bool(_HOSTS.search(self.name))

    def give(self, amount: float) -> float:
        """Take up to `amount` of this timer's self time (it was counted again elsewhere); returns what was taken."""
        taken = min(max(0.0, self.self_wall), amount)
        if self.self_wall > 0:
            self.self_user = max(0.0, self.self_user * (1 - taken / self.self_wall))
        self.self_wall -= taken
        return taken


def _account(siblings: list[dict], budget: float, out: list[_Node]) -> None:
    """Append `siblings` and everything nested in them, taking out what is counted twice among them.

    `budget` is the time the siblings share (their parent's, or the run's total);
    what they add up to beyond it is a dynamic pipeline counted both under its
    own timer and in the pass that ran it.
    """
    first = len(out)
    overcount = max(0.0, sum(_dur(e, "wall") for e in siblings) - budget)
    for entry in siblings:
        before = len(out)
        children = [c for c in entry.get("passes", []) if c]
        wall, user = _dur(entry, "wall"), _dur(entry, "user")
        node = _Node(entry["name"], wall - sum(_dur(c, "wall") for c in children),
                     user - sum(_dur(c, "user") for c in children))
        out.append(node)
        _account(children, wall, out)
        node.self_wall, node.self_user = max(0.0, node.self_wall), max(0.0, node.self_user)
        if overcount > _EPS and node.is_pipeline:
            need = min(wall, overcount)
            for host in reversed(out[first:before]):  # the latest pass before it that can have run it
                if need <= _EPS:
                    break
                if host.is_host:
                    taken = host.give(need)
                    need -= taken
                    overcount -= taken
    # A pipeline merged into a timer made before its host's: what is left comes out of the hosts with most left.
    for host in sorted((n for n in out[first:] if n.is_host), key=lambda n: -n.self_wall):
        if overcount <= _EPS:
            break
        overcount -= host.give(overcount)


def _dur(entry: dict, kind: str) -> float:
    rec = entry.get(kind) or entry.get("wall") or {}  # single-threaded runs report wall time only
    return float(rec.get("duration", 0.0))


# -- profiling a build -------------------------------------------------------------

# Single-threaded, so that the timers of passes add up to the phase's time (threads would overlap them).
TIMING_FLAGS = ("--mlir-disable-threading", "--mlir-timing", "--mlir-timing-display=tree", "--mlir-output-format=json")


def stamp_of(build) -> str:
    """What identifies a build's outputs: its phase records and total time change with every rebuild."""
    data = json.dumps([build.phases, build.total_seconds, build.vmfb], sort_keys=True, default=str)
    return hashlib.sha256(data.encode()).hexdigest()[:16]


def profile_file(root: Path, build_name: str) -> Path:
    return Path(root) / PROFILES_DIR / f"{build_name}.json"


def load_profile(ws, build_name: str = "main") -> BuildProfile | None:
    """The recorded profile of a build, or None when there is none or the build changed since."""
    from ..workspace.variants import resolve

    path = profile_file(ws.root, build_name)
    if not path.exists():  # a folder in its place is named below, as unreadable
        return None
    try:
        prof = BuildProfile.from_json(read_text(path))
    except (ValueError, KeyError, TypeError, AttributeError) as exc:  # malformed or mistyped JSON
        raise BadFile(path, f"not a compile profile ({exc}); delete it to record a new one") from None
    return prof if prof.build_stamp == stamp_of(resolve(ws, build_name)) else None


class ProfileJob:
    """Compiles each phase of a build alone with `--mlir-timing` and publishes profiles/<build>.json.

    `run()` blocks and returns the BuildProfile; `cancel()` may be called from any
    thread; `on_progress(done, running)` as for a compile. A failed or cancelled
    run leaves the workspace as it was.
    """

    def __init__(self, ws, build_name: str = "main", *, phases: list[str] | None = None,
                 on_progress: Callable[[str | None, str | None], None] | None = None):
        from ..workspace.variants import resolve

        self.ws, self.build_name, self.on_progress = ws, build_name, on_progress
        self.build = resolve(ws, build_name)
        available = list(self.build.snapshots())
        self.phases = [p for p in available if phases is None or p in phases]
        self._cancel = threading.Event()

    @property
    def expected_phases(self) -> tuple[str, ...]:
        return tuple(self.phases)

    def cancel(self) -> None:
        self._cancel.set()

    def run(self) -> BuildProfile:
        profile = BuildProfile(self.build_name, {}, stamp_of(self.build), time.time())

        def measure(staging: Path) -> str:
            for i, phase in enumerate(self.phases):
                self._report(self.phases[i - 1] if i else None, phase)
                profile.phases[phase] = self._profile_phase(phase, staging / phase)
            return profile.to_json()

        publish_record(self.ws, profile_file(Path("."), self.build_name), measure, build_name=self.build_name,
                       stamp=profile.build_stamp)
        self._report(self.phases[-1] if self.phases else None, None)
        return profile

    def _profile_phase(self, phase: str, scratch: Path) -> PhaseProfile:
        from ..compile.compiler import build_command
        from ..compile.phases import PHASES
        from ..workspace.variants import options_for

        previous = PHASES[PHASES.index(phase) - 1]
        source = self.ws.imported_path if previous == "start" else self.build.snapshot_path(previous)
        if source is None or not source.is_file():
            raise WorkspaceError(self.ws.root, f"the {previous} snapshot of build {self.build_name!r} is missing")
        options = options_for(self.ws, self.build_name).with_(from_phase=previous, to_phase=phase)
        scratch.mkdir(parents=True)
        cmd = [*build_command(source, scratch / "dumps", scratch / "out.mlir", options), *TIMING_FLAGS]
        code, stderr = run_cancellable(cmd, scratch / "stderr.log", self._cancel)
        if code is None:
            raise Cancelled("profile")
        if code != 0:
            from ..compile.compiler import summarize_stderr

            reason, _, _ = summarize_stderr(stderr, source)
            raise CompileFailed(source, f"profiling phase {phase}: {reason}", log=stderr)
        return phase_profile(phase, timing_report(stderr), cmd)

    def _report(self, done, running) -> None:
        if self.on_progress is not None:
            self.on_progress(done, running)


def publish_record(ws, rel: Path, measure: Callable[[Path], "str | Path"], *, build_name: str | None = None,
                   stamp: str | None = None) -> None:
    """Call `measure(staging)` and publish what it made at `rel`, with the manifest unchanged.

    `measure` returns the record's text, or the path of a file it wrote in the
    staging folder. It runs without holding the workspace, so a compile may go
    on meanwhile; the record is published under the lock only if the build it
    describes (`build_name`) still has `stamp`. A failure or cancel inside
    `measure`, or a build changed meanwhile, leaves the workspace as it was.
    """
    from ..workspace.manifest import Manifest
    from ..workspace.variants import resolve

    txn = ws.transaction(wait=30)
    try:
        staging = txn.stage()  # before the lock: measuring does not hold the workspace
        made = measure(staging)
        if isinstance(made, Path):
            staged = made
        else:
            staged = staging / "record.json"
            staged.write_text(made, encoding="utf-8")
        txn.begin()
        if build_name is not None:
            current = type(ws)(ws.root, Manifest.load(ws.root))
            if stamp_of(resolve(current, build_name)) != stamp:
                raise WorkspaceError(ws.root, f"build {build_name!r} changed while it was measured; "
                                              "measure it again")
        txn.publish.move(staged, str(rel))
        txn.commit(read_text(ws.root / "manifest.json"))
    finally:
        txn.end()


def run_cancellable(cmd: list[str], stderr_path: Path, cancel: threading.Event, *, timeout: float | None = None,
                    poll: float = 0.05) -> tuple[int | None, str]:
    """Run a child with stderr to a file; (exit code, stderr), or (None, stderr) when cancelled or timed out."""
    deadline = None if timeout is None else time.monotonic() + timeout
    with open(stderr_path, "wb") as err:
        proc = processes.start_child(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
        try:
            while proc.poll() is None:
                if cancel.wait(poll) or (deadline is not None and time.monotonic() >= deadline):
                    processes.stop(proc)
                    return None, stderr_path.read_text(errors="replace")
        except BaseException:
            processes.stop(proc)
            raise
    return proc.returncode, stderr_path.read_text(errors="replace")
