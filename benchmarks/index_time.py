"""Dispatch-index speed: index every phase of light densenet121 vs. its compile.

Usage: .venv/bin/python benchmarks/index_time.py [--no-update]
Compiles once (into a temporary folder), times iree-compile, times
dispatch_index.index_file on every phase snapshot, prints the ratio and rewrites
the "Dispatch index" section of docs/PERFORMANCE.md.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import onnx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from npu_studio.core.compile.phases import SNAPSHOT_PHASES  # noqa: E402
from npu_studio.core.ir.dispatch_index import index_file  # noqa: E402
from tests.core.conftest_index import ZOO, compile_phases, phase_file, prepare  # noqa: E402

BEGIN, END = "<!-- index-bench -->", "<!-- /index-bench -->"


def main() -> int:
    model = prepare(onnx.load(ZOO / "light_densenet121.onnx"))
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        phases = compile_phases(model, Path(tmp) / "densenet121")
        compile_s = time.perf_counter() - t0
        rows = []
        for phase in SNAPSHOT_PHASES:
            path = phase_file(phases, phase)
            t = time.perf_counter()
            idx = index_file(path, phase)
            rows.append((phase, time.perf_counter() - t, path.stat().st_size, idx.num_dispatch_sites))
    index_s = sum(r[1] for r in rows)
    ratio = index_s / compile_s
    lines = [
        BEGIN,
        "## Dispatch index",
        "",
        f"`benchmarks/index_time.py`: light densenet121 ({rows[SNAPSHOT_PHASES.index('flow')][3]} dispatch sites),"
        " llvm-cpu, host CPU.",
        "",
        f"- compile (import excluded, `iree-compile` with phase dumps): {compile_s:.2f} s",
        f"- index all 12 phases: {index_s:.2f} s",
        f"- ratio index/compile: **{ratio:.3f}** (goal < 0.25)",
        "",
        "| phase | size | dispatch sites | index s |",
        "|---|---:|---:|---:|",
    ]
    for phase, secs, size, n in rows:
        lines.append(f"| {phase} | {size / 1e6:.2f} MB | {n} | {secs:.2f} |")
    lines.append(END)
    section = "\n".join(lines)
    print(section)
    if "--no-update" not in sys.argv:
        doc = REPO / "docs" / "PERFORMANCE.md"
        text = doc.read_text() if doc.exists() else "# Performance\n"
        if BEGIN in text and END in text:
            a, b = text.index(BEGIN), text.index(END) + len(END)
            text = text[:a] + section + text[b:]
        else:
            text = text.rstrip("\n") + "\n\n" + section + "\n"
        doc.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
