"""An IR view's old navigation index is let go a slice at a time on a thread, never all at once on the
GUI's: freeing a million-line text's index at once held the GIL (and so the window) for a second. The
truth is what is left in the index's containers, and who still holds it."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from npu_studio.core.ir import nav_index  # noqa: E402
from npu_studio.core.ir.nav_scan import DROP_SLICE, drop_gradually  # noqa: E402
from tests.ui.test_ir_navigation import shown_navigable  # noqa: E402

TEXT = "func.func @f(%a: f32) -> f32 {\n  %r = arith.addf %a, %a : f32\n  return %r : f32\n}\n"


def test_drop_gradually_empties_lists_and_dicts_bigger_than_a_slice():
    items = list(range(DROP_SLICE * 2 + 7))
    table = {n: str(n) for n in range(DROP_SLICE + 3)}
    drop_gradually(items)
    drop_gradually(table)
    assert items == [] and table == {}


def test_a_released_index_is_empty():
    index = nav_index.build(TEXT * 3)
    assert index.entities and index.lines and index.folds
    index.release_gradually()
    assert (index.entities, index.lines, index.facts, index.outline, index.folds, index.folds_by_start) == \
        ([], [], [], [], [], {})


def test_the_old_index_is_released_on_a_thread_unless_someone_still_holds_it(qtbot, monkeypatch):
    released = []
    original = nav_index.NavIndex.release_gradually

    def spy(self):
        released.append(self.lines[0] if self.lines else None)  # which text's index
        original(self)

    monkeypatch.setattr(nav_index.NavIndex, "release_gradually", spy)
    widget, (view, navigator, _, _) = shown_navigable(qtbot, "// first\n" + TEXT)
    with qtbot.waitSignal(navigator.sig_index_ready, timeout=30_000):
        view.set_text("// second\n" + TEXT)
    qtbot.waitUntil(lambda: "// first" in released, timeout=5_000)

    kept = navigator.index  # the second text's index, held here as by another view
    with qtbot.waitSignal(navigator.sig_index_ready, timeout=30_000):
        view.set_text("// third\n" + TEXT)
    qtbot.wait(200)
    assert "// second" not in released
    assert kept.lines[0] == "// second" and kept.entities  # intact for whoever holds it
    widget.close()
