"""The IR before and after every pass inside one phase, cached in the workspace.

One run of `iree-compile --compile-from=<previous phase> --compile-to=<phase>
--mlir-print-ir-before-all --mlir-print-ir-after-all --mlir-disable-threading`
on the previous phase's snapshot. Printing "before" as well as "after" gives
each pass its own input in the same scope (a function pass prints only its
function), so whether a pass changed anything is an exact comparison and its
diff needs no reconstruction of the module. Threading is off so dumps come
out in execution order.

The stream is read line by line as the compiler writes it, copied to
`passes/<phase>/trace.mlir` and indexed (byte offsets of every dump, a hash
of each, the op it ran on, the time between its before and after dumps);
no dump is ever held in memory beyond the one being hashed, so traces of
100 MB stay usable: a view reads one pass's dumps by offset.
"""

from __future__ import annotations

import hashlib
import json
import mmap
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Iterator

from .. import processes
from ..compile import toolchain
from ..compile.options import target_flags
from ..compile.phases import PHASES, SNAPSHOT_PHASES
from ..errors import Cancelled, CompileFailed, StudioError
from ..textio import parse_json, read_bytes
from ..ir.diff import DiffOptions, TextDiff, diff_texts
from ..workspace.confine import folder_inside, inside, remove_inside
from ..workspace.publish_journal import STAGING_PREFIX, clean_stale_staging

TRACE_VERSION = 1
PASSES_DIR = "passes"  # in the workspace: passes/<phase>/ (trace.mlir, index.json)
ELIDE_ELEMENTS = 16  # weights print as dense_resource<__elided__>: they would dwarf the IR
_HEADER_ANYWHERE = re.compile(rb"^// -----// IR Dump (Before|After) (.+?)(?: Failed)?(?:: (.*?))? //----- //$", re.M)
_FIRST_OP_LINE = re.compile(rb"^[ \t]*(?![#/{ \t\r\n]).+$", re.M)  # the first line that is no alias or comment
_OP_LINE = re.compile(
    r"^\s*(?:%[^=]*=\s*)?\"?([A-Za-z_][\w.$]*)\"?(?:\s+(?:(?:public|private|nested)\s+)*(@[\w$.\-]+|@\"[^\"]*\"))?"
)

# (passes seen so far) -> None; called from the reading thread.
TraceProgress = Callable[[int], None]


@dataclass
class PassRecord:
    """One pass run on one op. Offsets are bytes into trace.mlir; bodies exclude the header line."""

    index: int
    name: str  # e.g. CanonicalizePass
    argument: str  # e.g. iree-flow-canonicalize{...}
    op: str  # the op it ran on: "builtin.module", "util.func @main"
    depth: int  # nesting under pass adaptors
    before: tuple[int, int]  # (offset, length)
    after: tuple[int, int]
    changed: bool
    seconds: float

    @property
    def label(self) -> str:
        return f"{self.name} ({self.argument})" if self.argument else self.name


@dataclass
class PassTrace:
    phase: str
    folder: Path
    passes: list[PassRecord]
    input_sha: str
    seconds: float  # wall time of the traced compile

    @property
    def path(self) -> Path:
        return self.folder / "trace.mlir"

    def changed(self) -> list[PassRecord]:
        return [p for p in self.passes if p.changed]

    def text(self, record: PassRecord, which: str = "after") -> str:
        offset, length = record.after if which == "after" else record.before
        with open(self.path, "rb") as f:
            f.seek(offset)
            return f.read(length).decode(errors="replace")

    def diff(self, record: PassRecord, options: DiffOptions = DiffOptions()) -> TextDiff:
        return diff_texts(self.text(record, "before"), self.text(record, "after"),
                          f"before {record.name} on {record.op}", f"after {record.name} on {record.op}", options)

    def grep_names(self, needle: str) -> list[PassRecord]:
        n = needle.lower()
        return [p for p in self.passes if n in p.name.lower() or n in p.argument.lower()]

    def first_output_containing(self, needle: str, *, introduced: bool = False) -> PassRecord | None:
        """The first pass whose output contains `needle` (with `introduced`: and whose input did not).

        An op name matches as a whole name: `flow.dispatch` does not match `flow.dispatch.workgroups`.
        A pass adaptor is narrowed to the nested pass that did it.
        """
        pattern = re.compile(rb"(?<![\w.$%@])" + re.escape(needle.encode()) + rb"(?![\w.$])")
        with open(self.path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
            def hit(p: PassRecord) -> bool:
                if pattern.search(m, p.after[0], p.after[0] + p.after[1]) is None:
                    return False
                return not (introduced and pattern.search(m, p.before[0], p.before[0] + p.before[1]))

            found = None
            candidates = self.passes
            while True:
                match = next((p for p in candidates if hit(p)), None)
                if match is None:
                    return found
                found = match
                candidates = self.children(match)

    def children(self, record: PassRecord) -> list[PassRecord]:
        """The passes a pass adaptor ran (the ones nested right under it)."""
        out = []
        for p in self.passes[record.index + 1:]:
            if p.depth <= record.depth:
                break
            if p.depth == record.depth + 1:
                out.append(p)
        return out

    def first_changing_symbol(self, symbol: str) -> PassRecord | None:
        """The first pass that changed the op `symbol` names (an executable, a function) or a line naming it."""
        sym = symbol if symbol.startswith("@") else "@" + symbol
        for p in self.changed():
            op_sym = p.op.split(" ", 1)[1] if " " in p.op else ""
            if op_sym.startswith(sym):
                return p
            d = self.diff(p)
            for tag, i1, i2, j1, j2 in d.codes:
                if tag != "equal" and any(sym in line for line in d.a_lines[i1:i2] + d.b_lines[j1:j2]):
                    return p
        return None


def previous_phase(phase: str) -> str:
    if phase not in SNAPSHOT_PHASES:
        raise StudioError(None, f"no pass view for phase {phase!r}; expected one of: {', '.join(SNAPSHOT_PHASES)}")
    return PHASES[PHASES.index(phase) - 1]


def trace_command(input_path: Path, phase: str, target: str, output: Path) -> list[str]:
    cmd = [str(toolchain.iree_compile()), str(input_path), *target_flags(target)]
    source = previous_phase(phase)
    if source != "start":
        cmd.append(f"--compile-from={source}")
    return cmd + [
        f"--compile-to={phase}",
        "--mlir-print-ir-before-all",
        "--mlir-print-ir-after-all",
        "--mlir-disable-threading",
        f"--mlir-elide-elementsattrs-if-larger={ELIDE_ELEMENTS}",
        "--mlir-elide-resource-strings-if-larger=64",
        "-o", str(output),
    ]


def _op_of(first_line: str) -> str:
    m = _OP_LINE.match(first_line)
    if not m:
        return "?"
    name = "builtin.module" if m.group(1) == "module" else m.group(1)
    return f"{name} {m.group(2)}" if m.group(2) else name


def _file_sha(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


class PassTraceJob:
    """Build (or load from the cache) the pass trace of one phase. `run()` blocks; `cancel()` from any thread."""

    def __init__(self, workspace, phase: str, on_progress: TraceProgress | None = None):
        self.workspace = workspace
        self.phase = phase
        self.source = previous_phase(phase)
        self.input_path = Path(workspace.snapshot_path(self.source))
        self.folder = Path(workspace.root) / PASSES_DIR / phase
        self.on_progress = on_progress
        self._cancel = threading.Event()
        self._proc: subprocess.Popen | None = None
        self._lock = threading.Lock()

    def cancel(self) -> None:
        self._cancel.set()
        with self._lock:
            if self._proc is not None and self._proc.poll() is None:
                try:
                    os.killpg(self._proc.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass

    def cached(self) -> PassTrace | None:
        """The stored trace if it was made from the current input with the current target."""
        index = self.folder / "index.json"
        if not index.is_file() or not self.input_path.is_file():
            return None
        try:  # a damaged index (not an object, 10,000-deep, wrong fields) is no trace: made again
            data = parse_json(read_bytes(index), index, "a pass trace index")
            if (not isinstance(data, dict) or data.get("version") != TRACE_VERSION
                    or data.get("target") != self.workspace.manifest.target
                    or data.get("input_sha") != _file_sha(self.input_path)):
                return None
            passes = [PassRecord(**{**p, "before": tuple(p["before"]), "after": tuple(p["after"])})
                      for p in data["passes"]]
            return PassTrace(self.phase, self.folder, passes, data["input_sha"], float(data["seconds"]))
        except (StudioError, KeyError, TypeError, ValueError, AttributeError):
            return None

    def run(self) -> PassTrace:
        found = self.cached()
        if found is not None:
            return found
        if not self.input_path.is_file():
            raise StudioError(self.input_path, f"no snapshot of {self.source}; compile first")
        # Every folder written, renamed or deleted lies in the workspace, no link on the way (confine.py).
        root = self.workspace.root
        parent = folder_inside(root, PASSES_DIR)
        old = parent / f".old-{self.phase}"
        for path in (self.folder, old):
            inside(root, path)
        clean_stale_staging(parent)  # what a killed trace left behind
        staging = Path(tempfile.mkdtemp(prefix=f"{STAGING_PREFIX}{os.getpid()}-{self.phase}-", dir=parent))
        try:
            trace = self._run_in(staging)
            # Publish: the old folder goes only once the new one is complete.
            remove_inside(root, old)
            if self.folder.exists():
                os.replace(self.folder, old)
            os.replace(staging, self.folder)
            remove_inside(root, old)
            trace.folder = self.folder
            return trace
        finally:
            shutil.rmtree(staging, ignore_errors=True)

    def _run_in(self, staging: Path) -> PassTrace:
        input_sha = _file_sha(self.input_path)
        cmd = trace_command(self.input_path, self.phase, self.workspace.manifest.target, staging / "output.mlir")
        start = time.perf_counter()
        with self._lock:
            if self._cancel.is_set():
                raise Cancelled("pass trace")
            self._proc = processes.start_child(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                               stderr=subprocess.PIPE, bufsize=1 << 20)
        proc = self._proc
        try:
            with open(staging / "trace.mlir", "wb") as out:
                passes, diagnostics = _read_stream(proc.stderr, out, self.on_progress, self._cancel)
            proc.wait()
        finally:
            if proc.poll() is None:
                self.cancel()
                proc.wait()
            proc.stderr.close()
        seconds = time.perf_counter() - start
        if self._cancel.is_set():
            raise Cancelled("pass trace")
        if proc.returncode != 0:
            log = "\n".join(diagnostics)
            reason = next((ln for ln in diagnostics if "error:" in ln), f"iree-compile exited with {proc.returncode}")
            raise CompileFailed(self.input_path, f"pass trace of {self.phase}: {reason}", log=log)
        (staging / "output.mlir").unlink(missing_ok=True)
        data = {"version": TRACE_VERSION, "phase": self.phase, "target": self.workspace.manifest.target,
                "input_sha": input_sha, "seconds": seconds, "command": cmd,
                "passes": [asdict(p) for p in passes]}
        (staging / "index.json").write_text(json.dumps(data))
        return PassTrace(self.phase, staging, passes, input_sha, seconds)


class _StreamIndexer:
    """Indexes the dump stream chunk by chunk: headers are found with one regex pass per chunk and the
    text between them is hashed in bulk, so the per-line work of a 100 MB stream stays in C."""

    def __init__(self, on_progress: TraceProgress | None):
        self.on_progress = on_progress
        self.passes: list[dict] = []
        self.open_stack: list[dict] = []  # passes whose "before" was seen and "after" not yet
        self.current: dict | None = None  # the dump being read
        self.diagnostics: list[str] = []
        self.offset = 0  # of the next byte fed, in trace.mlir
        self.finished = 0

    def feed(self, data: bytes, now: float) -> None:
        """`data` ends at a line end."""
        pos = 0
        for m in _HEADER_ANYWHERE.finditer(data):
            self._body(data[pos:m.start()], now)
            self._header(m, self.offset + m.start(), self.offset + m.end() + 1, now)
            pos = m.end() + 1
        self._body(data[pos:], now)
        self.offset += len(data)

    def _body(self, text: bytes, now: float) -> None:
        if not text:
            return
        cur = self.current
        if cur is None:
            self.diagnostics += text.decode(errors="replace").splitlines()
            return
        cur["hash"].update(text)
        cur["last"] = now
        entry = cur["entry"]
        if entry["op"] is None:
            m = _FIRST_OP_LINE.search(text)
            if m:
                entry["op"] = _op_of(m.group().decode(errors="replace"))

    def _header(self, m: re.Match, start: int, body_start: int, now: float) -> None:
        self.close(start)
        kind = m.group(1).decode().lower()
        name, argument = m.group(2).decode(), (m.group(3) or b"").decode()
        if kind == "before":
            entry = {"name": name, "argument": argument, "depth": len(self.open_stack), "op": None}
            self.passes.append(entry)
            self.open_stack.append(entry)
        else:
            entry = self.open_stack.pop() if self.open_stack else None
            if entry is None:  # an "after" without "before": keep it, with an empty input
                entry = {"name": name, "argument": argument, "depth": 0, "op": None, "before": (start, 0),
                         "before_hash": b"", "ready": now}
                self.passes.append(entry)
            entry["done"] = now
            self.finished += 1
            if self.on_progress is not None:
                self.on_progress(self.finished)
        self.current = {"kind": kind, "start": body_start, "hash": hashlib.blake2b(digest_size=16),
                        "entry": entry, "last": now}

    def close(self, end: int) -> None:
        cur = self.current
        if cur is None:
            return
        entry = cur["entry"]
        entry[cur["kind"]] = (cur["start"], end - cur["start"])
        entry[cur["kind"] + "_hash"] = cur["hash"].digest()
        if cur["kind"] == "before":
            entry["ready"] = cur["last"]  # when the pass started, as seen on the stream
        self.current = None


def _read_stream(stream, out, on_progress, cancel: threading.Event) -> tuple[list[PassRecord], list[str]]:
    """Copy the dump stream to `out` and index it. Lines outside dumps (diagnostics) are returned."""
    indexer = _StreamIndexer(on_progress)
    pending = b""
    while not cancel.is_set():
        chunk = stream.read1(1 << 20)
        if not chunk:
            break
        data = pending + chunk
        cut = data.rfind(b"\n") + 1
        pending = data[cut:]
        if cut:
            indexer.feed(data[:cut], time.perf_counter())
            out.write(data[:cut])
    if pending:
        indexer.feed(pending + b"\n", time.perf_counter())
        out.write(pending + b"\n")
    indexer.close(indexer.offset)
    records = [_record(p) for p in indexer.passes if "after" in p and "before" in p]
    for i, r in enumerate(records):
        r.index = i
    return records, indexer.diagnostics


def _record(p: dict) -> PassRecord:
    return PassRecord(
        index=0, name=p["name"], argument=p["argument"], op=p["op"] or "?", depth=p["depth"],
        before=p["before"], after=p["after"], changed=p["before_hash"] != p["after_hash"],
        seconds=max(0.0, p.get("done", 0.0) - p.get("ready", 0.0)),
    )


def iter_passes(trace: PassTrace, *, changed_only: bool = False, grep: str | None = None) -> Iterator[PassRecord]:
    for p in trace.passes:
        if changed_only and not p.changed:
            continue
        if grep and grep.lower() not in p.label.lower() and grep.lower() not in p.op.lower():
            continue
        yield p
