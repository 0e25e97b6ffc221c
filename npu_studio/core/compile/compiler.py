"""Run iree-compile phase by phase, with snapshots, per-phase times and cancel.

One `iree-compile` process does the whole compile with
`--dump-compilation-phases-to`; the compiler writes each phase's snapshot as
soon as that phase ends, so the modification time of each snapshot marks the
end of its phase. Per-phase wall time is the gap between consecutive
snapshots (the first phase counts from process start). This costs nothing
over a plain dumping compile, unlike chaining one process per phase, which
would re-parse and re-print the whole module (weights included) at every
phase boundary. See docs/PERFORMANCE.md for the measured overhead.

A job writes into the folder it is given: the workspace hands it a staging
folder and publishes the outputs only when the compile succeeded
(workspace/job.py), so a cancelled or failed compile never leaves files that
could be taken for a good build.
"""

from __future__ import annotations

import os
import re
import select
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .. import processes
from ..errors import Cancelled, CompileFailed
from . import flag_policy, toolchain
from .options import CompileOptions
from .phases import PHASES, SNAPSHOT_PHASES

# Every hal.executable as IREE dumps it during the same compile (core/executables/catalog.py
# reads them): its source, its configured form and a standalone benchmark module.
EXECUTABLES_DIR = "executables"
EXECUTABLE_DUMPS = {
    "sources": "--iree-hal-dump-executable-sources-to",
    "configurations": "--iree-hal-dump-executable-configurations-to",
    "benchmarks": "--iree-hal-dump-executable-benchmarks-to",
}

_DUMP_NAME = re.compile(r"^.*\.(\d+)\.([a-z-]+)\.mlir$")

# (phase that just finished or None, phase now running or None)
ProgressCallback = Callable[[str | None, str | None], None]
# (phase, its snapshot): called as soon as the snapshot is complete, before the next report; the file
# is moved when the compile ends, so read it within the call.
SnapshotCallback = Callable[[str, Path], None]


@dataclass
class PhaseTiming:
    phase: str
    path: Path
    seconds: float
    size_bytes: int


@dataclass
class CompileResult:
    phases: list[PhaseTiming]
    vmfb: Path | None
    command: list[str]
    stderr: str
    total_seconds: float
    from_phase: str = "start"
    extra: dict = field(default_factory=dict)
    options: CompileOptions = CompileOptions()


def build_command(
    input_path: Path,
    dump_dir: Path,
    vmfb: Path,
    options: CompileOptions = CompileOptions(),
    *,
    reproducer: Path | None = None,
    executables_dir: Path | None = None,
) -> list[str]:
    """The exact iree-compile argument list. Always a list: symbols contain `$`."""
    flag_policy.check(options.extra_flags, where=input_path)  # nothing that loads or runs code, ever
    compiler = options.compiler or toolchain.iree_compile()
    cmd = [str(compiler), str(input_path), *options.flags()]
    cmd += [
        f"--dump-compilation-phases-to={dump_dir}",
        "--mlir-print-debuginfo",  # keeps ONNX node names in every snapshot
    ]
    if reproducer is not None:
        cmd.append(f"--mlir-pass-pipeline-crash-reproducer={reproducer}")
    if executables_dir is not None:
        cmd += [f"{flag}={executables_dir / kind}" for kind, flag in EXECUTABLE_DUMPS.items()]
    cmd += [*options.extra_flags, "-o", str(vmfb)]
    return cmd


def summarize_stderr(stderr: str, input_path: Path) -> tuple[str, int | None, int | None]:
    """One-line reason from compiler diagnostics, with the line and column in the input if given."""
    unsupported = re.search(
        r'loc\("([^"]+)"\): failed to legalize operation \'torch\.operator\'.*?name = "(onnx\.[A-Za-z0-9_]+)"',
        stderr,
    )
    if unsupported:
        node, op = unsupported.groups()
        return f"unsupported op {op} (ONNX node {node}): IREE cannot lower it", None, None
    located = re.compile(re.escape(str(input_path)) + r":(\d+):(\d+): (error: .*)")
    for line in stderr.splitlines():
        m = located.match(line.strip())
        if m:
            return m.group(3), int(m.group(1)), int(m.group(2))
        if "error:" in line:
            return line.strip(), None, None
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    return (lines[-1].strip() if lines else "iree-compile failed without a message"), None, None


class CompileJob:
    """One iree-compile run writing into `out_dir`. `run()` blocks; `cancel()` may be called from any thread.

    A failed compile's crash reproducer is moved to `keep_dir` (default `out_dir`).
    """

    def __init__(
        self,
        input_path: Path,
        out_dir: Path,
        options: CompileOptions = CompileOptions(),
        *,
        on_progress: ProgressCallback | None = None,
        on_snapshot: SnapshotCallback | None = None,
        poll_seconds: float = 0.05,
        display_path: Path | None = None,
        keep_dir: Path | None = None,
    ):
        self.input_path = Path(input_path)
        # The file errors are reported against: the user's model rather than our copy of it.
        self.display_path = Path(display_path) if display_path else self.input_path
        self.out_dir = Path(out_dir)
        self.keep_dir = Path(keep_dir) if keep_dir is not None else self.out_dir
        self.options = options
        self.on_progress = on_progress
        self.on_snapshot = on_snapshot
        self._dumps_listed = 0  # files in the dump folder at the last poll
        self.poll_seconds = poll_seconds
        self._cancel = threading.Event()
        self._proc: subprocess.Popen | None = None
        self._lock = threading.Lock()

    @property
    def expected_phases(self) -> tuple[str, ...]:
        return self.options.phases()

    def cancel(self) -> None:
        self._cancel.set()
        with self._lock:
            if self._proc is not None:
                processes.kill_group(self._proc, "cancelled")

    def run(self) -> CompileResult:
        staging = self.out_dir
        staging.mkdir(parents=True, exist_ok=True)
        dump_dir = staging / "dumps"
        vmfb = staging / "module.vmfb"
        reproducer = staging / "crash-reproducer.mlir"
        cmd = build_command(self.input_path, dump_dir, vmfb, self.options, reproducer=reproducer,
                            executables_dir=staging / EXECUTABLES_DIR)
        stderr_path = staging / "stderr.log"
        expected = self.expected_phases
        seen: set[str] = set()
        self._dumps_listed = 0
        self._report(None, expected[0] if expected else None)
        start = time.time()
        with open(stderr_path, "wb") as err:
            with self._lock:
                if self._cancel.is_set():
                    raise Cancelled()
                # Its own process group, killed with us: cancel(), Ctrl+C or our death stop it.
                self._proc = processes.start_child(
                    cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err
                )
            proc = self._proc
            exit_fd = _pidfd(proc)
            try:
                while not self._exited(proc, exit_fd):
                    if self._cancel.is_set():
                        processes.stop(proc)
                        raise self._cancelled(dump_dir, expected, seen, start)
                    self._report_new_dumps(dump_dir, expected, seen, final=False)
            except BaseException:  # cancel, Ctrl+C, SIGTERM, a failing progress callback
                processes.stop(proc)
                with self._lock:
                    self._proc = None
                raise
            finally:
                if exit_fd is not None:
                    os.close(exit_fd)
            end = time.time()
        with self._lock:
            self._proc = None
        if self._cancel.is_set():
            raise self._cancelled(dump_dir, expected, seen, start)
        stderr = stderr_path.read_text(errors="replace")
        if proc.returncode != 0:
            kept = self._keep_reproducer(reproducer)
            reason, line, col = summarize_stderr(stderr, self.input_path)
            if proc.returncode < 0:
                reason = f"iree-compile died with signal {-proc.returncode}: {reason}"
            if kept is not None:
                reason += f" (reproducer: {kept})"
            # A line:col only means something in a text with the input's lines.
            where = self.display_path
            if line is not None and where.suffix.lower() != self.input_path.suffix.lower():
                where = self.input_path
            raise CompileFailed(where, reason, log=stderr, reproducer=kept, line=line, col=col)
        self._report_new_dumps(dump_dir, expected, seen, final=True)
        dumps = _dumps_by_phase(dump_dir)
        missing = [p for p in expected if p not in dumps]
        if missing or (self.options.builds_module and not vmfb.is_file()):
            raise CompileFailed(
                self.display_path,
                f"iree-compile exited 0 but wrote no snapshot for {', '.join(missing) or 'the vmfb'}",
                log=stderr,
            )
        timings = _timings(dumps, expected, start)
        return self._publish(staging, timings, cmd, stderr, end - start)

    def _exited(self, proc: subprocess.Popen, exit_fd: int | None) -> bool:
        """Whether `proc` has ended, after waiting up to a poll interval. With a pidfd the wait ends the
        moment it does (cancel() kills it, so that ends the wait too); else a cancel does."""
        if exit_fd is not None:
            select.select([exit_fd], [], [], self.poll_seconds)
        else:
            self._cancel.wait(self.poll_seconds)
        return proc.poll() is not None

    def _cancelled(self, dump_dir: Path, expected, seen: set[str], start: float) -> Cancelled:
        """Cancelled, keeping the snapshots of the phases that had finished (reported done)."""
        finished = [p for p in expected if p in seen]
        dumps = _dumps_by_phase(dump_dir)
        exc = Cancelled()
        exc.finished = self._publish_phases(_timings(dumps, finished, start)) if finished else []
        return exc

    def _publish_phases(self, timings: list[PhaseTiming]) -> list[PhaseTiming]:
        phases_dir = self.out_dir / "phases"
        phases_dir.mkdir(exist_ok=True)
        published: list[PhaseTiming] = []
        for t in timings:
            dest = phases_dir / snapshot_name(t.phase)
            os.replace(t.path, dest)
            published.append(PhaseTiming(t.phase, dest, t.seconds, t.size_bytes))
        return published

    def _publish(self, staging, timings, cmd, stderr, total) -> CompileResult:
        """Name the snapshots by phase in out_dir (phases/NN.<phase>.mlir); only complete results get here."""
        published = self._publish_phases(timings)
        vmfb = self.out_dir / "module.vmfb" if self.options.builds_module else None  # --compile-to: no module
        return CompileResult(published, vmfb, cmd, stderr, total, self.options.from_phase, options=self.options)

    def _keep_reproducer(self, reproducer: Path) -> Path | None:
        if not reproducer.is_file():
            return None
        kept = self.keep_dir / "crash-reproducer.mlir"
        if kept != reproducer:
            self.keep_dir.mkdir(parents=True, exist_ok=True)
            os.replace(reproducer, kept)
        return kept

    def _report(self, done: str | None, running: str | None) -> None:
        if self.on_progress is not None:
            self.on_progress(done, running)

    def _report_new_dumps(self, dump_dir, expected, seen, *, final: bool) -> None:
        # A snapshot is complete once the next one exists (or the compiler exited).
        if not final:  # most polls find the folder as it was: one listing tells, before any parsing of names
            try:
                count = len(os.listdir(dump_dir))
            except OSError:
                count = 0
            if count == self._dumps_listed:
                return
            self._dumps_listed = count
        present = _dumps_by_phase(dump_dir)
        order = [p for p in expected if p in present]
        complete = order if final else order[:-1]
        for phase in complete:
            if phase in seen:
                continue
            seen.add(phase)
            if self.on_snapshot is not None:
                self.on_snapshot(phase, present[phase])
            i = expected.index(phase)
            running = expected[i + 1] if i + 1 < len(expected) else None
            self._report(phase, running)


def _pidfd(proc: subprocess.Popen) -> int | None:
    """A descriptor that becomes readable when `proc` ends (Linux 5.3 and later), or None."""
    try:
        return os.pidfd_open(proc.pid)
    except (AttributeError, OSError):
        return None


def snapshot_name(phase: str) -> str:
    """File name of a phase snapshot in a workspace: 06.flow.mlir."""
    return f"{PHASES.index(phase):02d}.{phase}.mlir"


def _dumps_by_phase(dump_dir: Path) -> dict[str, Path]:
    found: dict[str, Path] = {}
    if not dump_dir.is_dir():
        return found
    for entry in os.scandir(dump_dir):
        m = _DUMP_NAME.match(entry.name)
        if m and m.group(2) in SNAPSHOT_PHASES:
            found[m.group(2)] = Path(entry.path)
    return found


def _timings(dumps: dict[str, Path], expected, start: float) -> list[PhaseTiming]:
    timings = []
    previous = start
    for phase in expected:
        st = dumps[phase].stat()
        finished = st.st_mtime_ns / 1e9
        timings.append(PhaseTiming(phase, dumps[phase], max(0.0, finished - previous), st.st_size))
        previous = max(previous, finished)
    return timings
