"""Cyclic garbage is collected on the GUI thread only, never by a worker that happens to allocate."""

from __future__ import annotations

import gc
import threading
import weakref

from PySide6 import QtWidgets

from npu_studio.ui.gui_gc import GuiThreadCollector


class _Node:
    pass


def _cycles(count: int, freed_on: list) -> None:
    for _ in range(count):
        a, b = _Node(), _Node()
        a.other, b.other = b, a
        weakref.finalize(a, lambda: freed_on.append(threading.current_thread().name))


def test_a_worker_allocating_cycles_never_collects_them(qapp):
    collector = GuiThreadCollector(QtWidgets.QApplication.instance())
    try:
        gc.collect()
        freed_on: list[str] = []
        # far past generation 0's threshold: with automatic collection, the worker would collect
        worker = threading.Thread(target=_cycles, args=(20 * gc.get_threshold()[0], freed_on), name="worker")
        worker.start()
        worker.join()
        assert freed_on == []
        assert collector.collect_due() >= 0
        gc.collect()  # whatever survived into older generations
        assert freed_on and set(freed_on) == {threading.main_thread().name}
    finally:
        collector.stop()
    assert gc.isenabled()


def test_nothing_is_collected_below_the_thresholds(qapp):
    collector = GuiThreadCollector(QtWidgets.QApplication.instance())
    try:
        gc.collect()
        assert collector.collect_due() == -1
    finally:
        collector.stop()


def test_a_long_lived_build_holds_collections_then_leaves_them_its_objects(qapp):
    """The IR view's navigation index (about a million objects) must not be walked by the GUI thread's
    collections: none runs while it builds, and afterwards its objects are frozen out of them."""
    from npu_studio.ui.gui_gc import long_lived_build

    collector = GuiThreadCollector(QtWidgets.QApplication.instance())
    try:
        gc.collect()
        with long_lived_build():
            built = [[i] for i in range(20 * gc.get_threshold()[0])]  # far past generation 0's threshold
            assert collector.collect_due() == -1
        assert gc.get_freeze_count() >= len(built)
        assert not any(o is built for o in gc.get_objects())  # in no collected generation
        del built
    finally:
        gc.unfreeze()
        collector.stop()
