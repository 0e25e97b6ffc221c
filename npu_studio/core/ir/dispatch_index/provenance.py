"""Which ONNX nodes an op came from: the names in its MLIR location."""

from __future__ import annotations

from ...lazy_import import lazy_module

ir = lazy_module("iree.compiler.ir")  # loaded on first use: not at the app's start

_IGNORED_LOC_NAMES = ("unknown",)


def onnx_names(loc: ir.Location, out: list[str], seen: set[str]) -> None:
    """Append the ONNX node names a location mentions (nested, in order)."""
    if isinstance(loc, ir.NameLoc):
        name = loc.name_str
        if (
            name
            and name not in _IGNORED_LOC_NAMES
            and not name.startswith("graph:")
            and not name.startswith("onnx_importer.")
            and name not in seen
        ):
            seen.add(name)
            out.append(name)
        onnx_names(loc.child_loc, out, seen)
    elif isinstance(loc, ir.FusedLoc):
        for sub in loc.locations:
            onnx_names(sub, out, seen)
    elif isinstance(loc, ir.CallSiteLoc):
        onnx_names(loc.callee, out, seen)
        onnx_names(loc.caller, out, seen)
