"""The dispatch functions of a flow module: each `func.func` inside a `flow.executable`'s module."""

from __future__ import annotations

from typing import Iterator

from ..lazy_import import lazy_module

ir = lazy_module("iree.compiler.ir")


def dispatch_functions(module) -> Iterator[tuple[tuple[str, str], object]]:
    """((executable, function) symbol names, the function op) for every dispatch function, in order."""
    for exe in module.regions[0].blocks[0].operations:
        exe = exe.operation
        if exe.name != "flow.executable":
            continue
        name = ir.StringAttr(exe.attributes["sym_name"]).value
        for inner in exe.regions[0].blocks[0].operations:
            if inner.operation.name != "builtin.module":
                continue
            for f in inner.operation.regions[0].blocks[0].operations:
                f = f.operation
                if f.name == "func.func":
                    yield (name, ir.StringAttr(f.attributes["sym_name"]).value), f
