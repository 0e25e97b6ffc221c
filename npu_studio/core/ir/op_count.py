"""Count the operations of a snapshot with the MLIR parser."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from ..textio import read_text
from .context import mlir_context


def ops_by_dialect(path: Path, context=None) -> Counter:
    """Operations per dialect prefix (`linalg`, `flow`, ...) in the file at `path`.

    Counting several files, pass one `context` (core/ir/context.py) for all: making one
    (registering every IREE dialect) costs more than parsing a typical snapshot.
    """
    from iree.compiler import ir

    counts: Counter = Counter()

    def visit(op):
        counts[op.name.split(".", 1)[0]] += 1
        return ir.WalkResult.ADVANCE

    with context or mlir_context():
        module = ir.Module.parse(read_text(path))
        module.operation.walk(visit)
        del module
    counts["builtin"] -= 1  # the top-level module itself
    return +counts
