"""Modules loaded on their first use, for the app's start.

IREE's Python bindings (`iree.compiler.ir`, which loads numpy) and numpy itself take about half
of the time to the first window, and the first window uses neither: they are needed once a view
indexes, parses or computes. A module that needs them only inside its functions binds the name to
`lazy_module(...)` instead of importing it; the first attribute read imports the module and copies
its namespace into the stand-in, so later reads cost what a module attribute costs.
"""

from __future__ import annotations

import importlib
import types


class _LazyModule(types.ModuleType):
    def __init__(self, name: str):
        super().__init__(name)

    def __getattr__(self, attr: str):  # called only while the namespace is not copied yet
        module = importlib.import_module(self.__name__)
        self.__dict__.update(module.__dict__)
        return getattr(module, attr)


def lazy_module(name: str) -> types.ModuleType:
    """`name`, imported on the first attribute read (the real module if it is loaded already)."""
    import sys

    return sys.modules.get(name) or _LazyModule(name)
