"""Modules stay under 500 lines (the developers' guide): a bigger one is split along its seams."""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "npu_studio"
LIMIT = 500


def test_no_module_is_over_500_lines():
    sizes = {p.relative_to(PACKAGE.parent): len(p.read_text(encoding="utf-8").splitlines())
             for p in PACKAGE.rglob("*.py")}
    assert len(sizes) > 50
    too_big = {str(p): n for p, n in sizes.items() if n > LIMIT}
    assert not too_big, f"over {LIMIT} lines: {too_big}"
