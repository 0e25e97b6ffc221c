"""Write one benchmark's section of docs/PERFORMANCE.md, between its own markers."""

from __future__ import annotations

import re
import resource
import time
from pathlib import Path

DOC = Path(__file__).resolve().parents[1] / "docs" / "PERFORMANCE.md"
HEADER = "# Performance\n\nEvery figure comes from one run of the script named in its section, on the 2-core CI machine.\n"


def write_section(marker: str, body: str) -> None:
    """Replace the text between <!-- marker --> and <!-- /marker --> (append it when missing)."""
    DOC.parent.mkdir(exist_ok=True)
    text = DOC.read_text() if DOC.exists() else HEADER
    block = f"<!-- {marker} -->\n{body.rstrip()}\n<!-- /{marker} -->"
    pattern = re.compile(rf"<!-- {re.escape(marker)} -->.*?<!-- /{re.escape(marker)} -->", re.S)
    text = pattern.sub(lambda _: block, text) if pattern.search(text) else text.rstrip() + "\n\n" + block + "\n"
    DOC.write_text(text)


def cpu_seconds() -> float:
    """CPU time of this process and of every child it has waited for."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def timed(fn):
    """(fn(), wall seconds, CPU seconds)."""
    w, c = time.perf_counter(), cpu_seconds()
    out = fn()
    return out, time.perf_counter() - w, cpu_seconds() - c
