"""Substitute an edited executable and check it: the one sequence `npu-studio substitute` and the
app's Executables area both run (neither composes the steps itself).

Steps, each announced by name to `on_step` as it starts:

    check        the --input files fit the model, the text parses and defines @name: before any build
    plain build  the build without substitutions to compare with: kept aside, or compiled from stream
    rebuild      IREE compiles the workspace with the substitution (executables/substitution.py)
    compare      the staged rebuild and the plain build run on the same inputs (numeric_gate.py);
                 only then is the rebuild published, with the verdict in its record, in one commit
    time         only when asked: the executable timed alone in both builds (kernel_timing.py)

A crash or kill -9 before the publish (during the comparison too) leaves the workspace as it was:
the previous build and the previous substitution with its verdict stay in force.

It lives in run/ because it needs the rebuild (executables/, one layer down) and the gate and the
timing (run/): run/ is the lowest layer that may import both.

Cancel: `started(job)` is called with each compile as it begins (the rebuild, then the plain
build), so that a caller can stop it from another thread (`started=lambda job: token.attach(job.cancel)`).
A stopped compile raises `Cancelled` and the previous build stays: the workspace job publishes only
on success. The comparison and the timing, once begun, run to their end.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Protocol

from ..compile.compiler import CompileResult, ProgressCallback
from ..executables import substitution as subs
from .kernel_timing import MAX_REPETITIONS, MAX_SECONDS, MIN_REPETITIONS, KernelTiming, time_substitution
from ..processes import fault_point
from ..textio import read_text
from ..workspace import trust
from .numeric_gate import DEFAULT_TOLERANCE, GateReport, compare_builds, load_inputs
from .runner import pick_function, random_inputs

CHECK, PLAIN_BUILD, REBUILD, COMPARE, TIME = "check", "plain build", "rebuild", "compare", "time"
STEPS = (CHECK, PLAIN_BUILD, REBUILD, COMPARE, TIME)


class Stoppable(Protocol):
    def cancel(self) -> None: ...


StepCallback = Callable[[str], None]
StartedCallback = Callable[[Stoppable], None]


@dataclass(frozen=True)
class TimingRequest:
    """How to time the substituted executable (kernel_timing.py's rule; its defaults are the CLI's)."""

    repetitions: int = MIN_REPETITIONS
    max_repetitions: int = MAX_REPETITIONS
    max_seconds: float = MAX_SECONDS
    whole_model: bool = True  # the whole model too, on the comparison's inputs


@dataclass
class SubstitutionOutcome:
    """What one substitute-and-check built and found."""

    name: str
    kind: str
    build: CompileResult  # the rebuild that substituted the text, as published in the workspace
    plain_folder: Path  # the build without substitutions it was compared with
    gate: GateReport
    timing: KernelTiming | None  # None when no timing was asked for


def substitute_and_check(ws, name: str, kind: str, text: str | Path, *,
                         input_files: list[Path] | None = None, tolerance: float | None = DEFAULT_TOLERANCE,
                         seed: int = 0, timing: TimingRequest | None = None,
                         on_step: StepCallback | None = None, on_phase: ProgressCallback | None = None,
                         started: StartedCallback | None = None) -> SubstitutionOutcome:
    """Substitute `text` for executable @name (`kind`: source or configuration), rebuild, build the
    plain build, compare the two on `input_files` (else seeded random inputs) and, when `timing`
    is given, time the executable. `text` may be the file that holds it: errors in it then name
    that file rather than the workspace's copy. `on_phase(done, running)` follows the rebuild's
    compile phase by phase. Raises SubstitutionError for a text that does not build, `Cancelled`
    when `started`'s stopper ran during a compile."""
    # First, before any draft, copy or build is written: the check runs the workspace's builds.
    trust.require(ws.root, "substitute (the build with and without the substitution, run to compare)")
    step = on_step or (lambda _name: None)
    step(CHECK)
    inputs, function = _checked_inputs(ws, input_files)
    user_file = text if isinstance(text, Path) else None
    with _errors_naming(user_file):
        rebuild = subs.substitute(ws, name, kind, _read(text), on_progress=on_phase)
    step(PLAIN_BUILD)
    plain = subs.plain_build(ws, started=started)
    step(REBUILD)
    gates: list[GateReport] = []

    def compare_before_publish(staged: CompileResult) -> None:
        if not subs.was_applied(staged.stderr, name):
            return  # published switched off, with the reason (Rebuild.run); nothing to compare
        step(COMPARE)
        fault_point("substitute-compare")
        report = compare_builds(ws, plain / "module.vmfb", input_files=input_files, tolerance=tolerance,
                                seed=seed, substituted_vmfb=staged.vmfb)
        subs.set_staged_verdict(ws, name, kind, report.verdict())
        gates.append(report)

    with _errors_naming(user_file):
        build = _run(rebuild, started, compare_before_publish)
    gate = gates[0]
    timed = None
    if timing is not None:
        step(TIME)
        if timing.whole_model and inputs is None:
            inputs, function = _random_inputs(ws, seed)
        timed = time_substitution(ws, name, plain, inputs=inputs, function=function,
                                  repetitions=timing.repetitions, max_repetitions=timing.max_repetitions,
                                  max_seconds=timing.max_seconds, whole_model=timing.whole_model)
    return SubstitutionOutcome(name, kind, build, plain, gate, timed)


def switch_substitution(ws, name: str, kind: str, enabled: bool, *, on_phase: ProgressCallback | None = None,
                        started: StartedCallback | None = None) -> CompileResult:
    """Switch a substitution that has built on or off, and rebuild (its verdict goes: it is rechecked
    when substituted again)."""
    return _run(subs.set_enabled(ws, name, kind, enabled, on_progress=on_phase), started)


def remove_substitution(ws, name: str, kind: str | None = None, *, on_phase: ProgressCallback | None = None,
                        started: StartedCallback | None = None) -> CompileResult | None:
    """Drop the substitution(s) of @name (their files stay); rebuild if one was in the build, else None."""
    rebuild = subs.remove(ws, name, kind, on_progress=on_phase)
    return _run(rebuild, started) if rebuild is not None else None


# -- the pieces -------------------------------------------------------------------------


def _run(rebuild: subs.Rebuild, started: StartedCallback | None,
         before_publish: Callable[[CompileResult], None] | None = None) -> CompileResult:
    if started is not None:
        started(rebuild)  # a stopper called before run() still stops it (CancellableBuild)
    return rebuild.run(before_publish)


def _checked_inputs(ws, input_files: list[Path] | None):
    """The input files loaded and checked against the model's entry point: a wrong file is
    reported before the rebuild, not after it. (None, None) without files."""
    if not input_files:
        return None, None
    sig = pick_function(ws.snapshot_path("input"))
    return load_inputs(list(input_files), sig), sig.name


def _random_inputs(ws, seed: int):
    sig = pick_function(ws.snapshot_path("input"))
    return random_inputs(sig, seed), sig.name


MAX_SOURCE_BYTES = 128 << 20  # an executable's text; IREE's dumps of one are a few MiB at most


def _read(text: str | Path) -> str:
    """The edited text, from the user's file: a regular file (a FIFO is refused without waiting,
    /dev/zero without reading it), bounded in size, UTF-8; else a BadFile naming it."""
    return text if not isinstance(text, Path) else read_text(text, MAX_SOURCE_BYTES)


@contextmanager
def _errors_naming(user_file: Path | None):
    """A SubstitutionError raised at `user_file` (same reason, line, column and log) when the text
    came from that file: the draft in the workspace is only a copy of it."""
    try:
        yield
    except subs.SubstitutionError as exc:
        if user_file is None:
            raise
        raise subs.SubstitutionError(user_file, exc.reason, line=exc.line, col=exc.col, log=exc.log) from None
