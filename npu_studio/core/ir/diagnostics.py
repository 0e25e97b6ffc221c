"""Compiler diagnostics parsed from iree-compile's stderr: one record per error, its notes attached."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

_DIAG = re.compile(r"^(?P<path>.+?):(?P<line>\d+):(?P<col>\d+): (?P<sev>error|warning|note|remark): (?P<msg>.*)$")
_BARE = re.compile(r"^(?:(?P<path><unknown>|[^:\s]+):(?:\d+:)*\s*)?(?P<sev>error|warning): (?P<msg>.*)$")


@dataclass
class Diagnostic:
    severity: str  # error, warning
    message: str
    path: str | None = None
    line: int | None = None
    col: int | None = None
    notes: list["Diagnostic"] = field(default_factory=list)

    def where(self) -> str:
        if self.path is None:
            return ""
        return f"{self.path}:{self.line}:{self.col}" if self.line is not None else self.path

    def text(self) -> str:
        """The diagnostic and its notes, one line each, as the Log lists them."""
        head = f"{self.where()}: {self.severity}: {self.message}" if self.path else f"{self.severity}: {self.message}"
        return "\n".join([head, *(f"  {n.where()}: note: {n.message}" for n in self.notes)])


def parse_diagnostics(stderr: str) -> list[Diagnostic]:
    """Errors and warnings in order, each once (the compiler can repeat one), with notes under them."""
    out: list[Diagnostic] = []
    seen: set[tuple] = set()
    current: Diagnostic | None = None
    for raw in stderr.splitlines():
        line = raw.rstrip()
        m = _DIAG.match(line)
        if m:
            d = Diagnostic(m["sev"], m["msg"].strip(), m["path"], int(m["line"]), int(m["col"]))
        else:
            m = _BARE.match(line)
            if not m:
                continue
            d = Diagnostic(m["sev"], m["msg"].strip(), m["path"])
        if d.severity in ("note", "remark"):
            if current is not None:
                current.notes.append(d)
            continue
        key = (d.severity, d.message, d.path, d.line, d.col)
        if key in seen:
            current = None
            continue
        seen.add(key)
        out.append(d)
        current = d
    return out


def first_error_in(diagnostics: list[Diagnostic], file_name: str) -> Diagnostic | None:
    """The first located error in a file named `file_name` (a phase's snapshot, wherever the compile
    read it from: the workspace compiles an edit from a copy in its staging folder)."""
    for d in diagnostics:
        if d.severity == "error" and d.path is not None and Path(d.path).name == file_name and d.line is not None:
            return d
    return None
