"""The phase table's op counts, made on a worker thread while the compiler runs, against MLIR's own
`--print-op-stats` (iree-opt) on the published snapshots."""

from __future__ import annotations

import json
import subprocess
import sys

from iree.compiler.tools.binaries import find_tool

from npu_studio.core.compile.phases import SNAPSHOT_PHASES
from npu_studio.core.ir.op_count import BackgroundOpCounts
from npu_studio.core.workspace.workspace import compile_model

from ..conftest import EXAMPLE


def mlir_op_stats(path) -> int:
    """Operations in the file as MLIR's -print-op-stats pass counts them, the top module left out."""
    proc = subprocess.run([find_tool("iree-opt"), "--allow-unregistered-dialect", "--print-op-stats",
                           str(path), "-o", "/dev/null"], capture_output=True, text=True, check=True, timeout=300)
    rows = [line.rsplit(",", 1) for line in (proc.stdout + proc.stderr).splitlines() if line.count(",") == 1]
    return sum(int(n) for _, n in rows) - 1


def test_counts_made_during_the_compile_match_mlir_op_stats(tmp_path):
    seen: list[tuple[str, bytes]] = []
    counting = BackgroundOpCounts()

    def on_snapshot(phase, path):
        seen.append((phase, path.read_bytes()))
        counting.add(phase, path)

    ws = compile_model(EXAMPLE, tmp_path / "ws", on_snapshot=on_snapshot)
    counts = counting.counts()
    snapshots = ws.snapshots()
    # Each snapshot handed over complete (as published), once, in phase order, while the compile ran.
    assert [p for p, _ in seen] == list(SNAPSHOT_PHASES)
    assert all(text == snapshots[p].read_bytes() for p, text in seen)
    assert sorted(counts) == sorted(SNAPSHOT_PHASES)
    for phase in ("input", "flow", "executable-targets", "vm"):
        assert sum(counts[phase].values()) == mlir_op_stats(snapshots[phase]), phase


def test_compile_command_table_matches_mlir_op_stats(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "npu_studio", "compile", str(EXAMPLE), "--workspace",
                           str(tmp_path / "ws"), "--json"], capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)["phases"]
    assert [r["phase"] for r in rows] == list(SNAPSHOT_PHASES)
    for row in rows:
        assert row["ops"] == mlir_op_stats(row["file"]), row["phase"]

