"""Named parameter references in printed IR: `#stream.parameter.named<"model"::"W"> : tensor<...>`.

The IR view shows what a reference stands for (name, shape, element type,
size) and, on request, statistics of its data read from the workspace's
archive. References are found per line with a regex: they are printed on
one line, and a view asks about one line at a time.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from ..lazy_import import lazy_module

from ..dtypes import numpy_storage_dtype, numpy_value_dtype
from ..units import format_bytes

np = lazy_module("numpy")  # loaded on first use: not at the app's start

_REF = re.compile(r'#stream\.parameter\.named<"(?P<scope>[^"]*)"::"(?P<key>[^"]*)">(?:\s*:\s*tensor<(?P<type>[^>]*)>)?')



@dataclass(frozen=True)
class ParamRef:
    scope: str
    key: str
    shape: tuple[int, ...] | None  # None when the line does not say
    element_type: str | None
    start: int  # column span of the reference in its line (0-based, end exclusive)
    end: int

    @property
    def nbytes(self) -> int | None:
        if self.shape is None or self.numpy_dtype is None:
            return None
        return math.prod(self.shape) * self.numpy_dtype.itemsize

    @property
    def numpy_dtype(self) -> np.dtype | None:
        # bf16 and f8 are read as their raw bits (widened in `as_float`)
        return numpy_storage_dtype(self.element_type) if self.element_type else None

    def describe(self) -> str:
        """`W: 1024x1024xf32, 4.0 MiB (parameter "model"::"W")`"""
        parts = [self.key]
        if self.shape is not None:
            parts.append(": " + "x".join(map(str, self.shape)) + f"x{self.element_type}")
        if self.nbytes is not None:
            parts.append(f", {format_bytes(self.nbytes)}")
        return "".join(parts) + f' (parameter "{self.scope}"::"{self.key}")'


def _parse_type(text: str | None) -> tuple[tuple[int, ...] | None, str | None]:
    if not text:
        return None, None
    *dims, element = text.split("x")
    if any(not d.isdigit() for d in dims):
        return None, element  # dynamic or encoded: the shape is not known from here
    return tuple(int(d) for d in dims), element


def refs_in_line(line: str) -> list[ParamRef]:
    refs = []
    for m in _REF.finditer(line):
        shape, element = _parse_type(m.group("type"))
        refs.append(ParamRef(m.group("scope"), m.group("key"), shape, element, m.start(), m.end()))
    return refs


def ref_at(line: str, col: int) -> ParamRef | None:
    """The reference under column `col` (0-based) of `line`, or the line's only one when col is None."""
    refs = refs_in_line(line)
    for ref in refs:
        if ref.start <= col < ref.end:
            return ref
    return None


def declared_types(text: str) -> dict[str, tuple[tuple[int, ...], str]]:
    """Shape and element type of every key referenced with a type somewhere in `text`."""
    found: dict[str, tuple[tuple[int, ...], str]] = {}
    for m in _REF.finditer(text):
        shape, element = _parse_type(m.group("type"))
        if shape is not None and element:
            found.setdefault(m.group("key"), (shape, element))
    return found


_GLOBAL = re.compile(r'util\.global\b[^@\n]*@\S+\s*(?::\s*tensor<(?P<held>[^>]*)>\s*)?=\s*' + _REF.pattern)


def held_types(text: str) -> dict[str, tuple[tuple[int, ...], str]]:
    """Shape and element type of the global holding each parameter in `text`.

    After a demotion the global's type differs from its reference's
    (`util.global @W : tensor<4xf16> = #stream.parameter.named<"model"::"W"> : tensor<4xf32>`),
    and the runtime reads the parameter's bytes as the global's type.
    """
    found: dict[str, tuple[tuple[int, ...], str]] = {}
    for m in _GLOBAL.finditer(text):
        shape, element = _parse_type(m.group("held") or m.group("type"))
        if shape is not None and element:
            found.setdefault(m.group("key"), (shape, element))
    return found


def as_float(values: np.ndarray, element_type: str) -> np.ndarray:
    """Values to take statistics of: the raw bits of a type numpy lacks (bf16, f8) as f32; others as they are."""
    stored, value = numpy_storage_dtype(element_type), numpy_value_dtype(element_type)
    if value is not None and stored != value:
        return values.view(value).astype(np.float32)
    return values
