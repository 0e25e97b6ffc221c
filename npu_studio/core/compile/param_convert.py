"""A parameter archive in the element types a build declares: the archive of a demoted build variant.

The workspace's `params.irpa` holds each weight as the ONNX model stores it
(f32). A build compiled with `--iree-input-demote-f32-to-f16` declares the
same parameters as f16 (`#stream.parameter.named<"model"::"W"> :
tensor<256x128xf16>`), and IREE's runtime then reads half of the f32 bytes
as f16 values. So such a build gets an archive of its own: every parameter
whose declared element type differs is converted (numpy's rounding to
nearest even, as IREE's demotion of inline constants), the others are
copied unchanged. A parameter whose declared shape differs cannot be
converted and is refused: a wrong-sized parameter is never read.

Converted data goes through a scratch file in chunks, so a big weight is
never held in memory twice.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..dtypes import numpy_value_dtype
from ..lazy_import import lazy_module
from ..errors import Cancelled, StudioError
from .param_refs import held_types
from .params import ParameterArchive

np = lazy_module("numpy")

_CHUNK_ELEMENTS = 1 << 22

Declared = dict[str, tuple[tuple[int, ...], str]]  # key -> (shape, element type), as param_refs reads them


def conversions(stored: Declared, wanted: Declared, where: Path) -> dict[str, tuple[str, str]]:
    """{key: (stored element type, wanted element type)} for each parameter declared with another type.

    StudioError (naming `where`, the build's snapshot) for a parameter whose
    shape differs or whose types numpy cannot convert between.
    """
    changed = {}
    for key, (shape, element) in wanted.items():
        if key not in stored:
            continue
        old_shape, old_element = stored[key]
        if element == old_element and shape == old_shape:
            continue
        if shape != old_shape:
            raise StudioError(where, f"parameter {key!r} is {_text(old_shape, old_element)} in the archive but "
                                     f"declared {_text(shape, element)}: it cannot be converted")
        if numpy_value_dtype(old_element) is None or numpy_value_dtype(element) is None:
            raise StudioError(where, f"parameter {key!r}: no conversion from {old_element} to {element}")
        changed[key] = (old_element, element)
    return changed


def convert_archive(source: Path, stored: Declared, wanted: Declared, dest: Path, work: Path,
                    where: Path, should_stop=lambda: False) -> list[str]:
    """Write `dest`: `source` with every parameter in the types `wanted` declares; returns the converted keys.

    Writes nothing and returns [] when no parameter needs converting.
    Cancelled when `should_stop()` (polled between chunks) says so.
    """
    import iree.runtime as rt

    changed = conversions(stored, wanted, where)
    if not changed:
        return []
    archive = ParameterArchive(source)
    work.mkdir(parents=True, exist_ok=True)
    scratch = work / "converted.bin"
    index = rt.ParameterIndex()
    # A value past the demoted type's range becomes inf, as in IREE's own demotion: no warning for it.
    with open(scratch, "wb") as out, np.errstate(over="ignore", invalid="ignore"):
        spans = {}
        for key, (old, new) in changed.items():
            shape = stored[key][0]
            values = archive.array(key, shape, numpy_value_dtype(old)).reshape(-1)
            start = out.tell()
            for i in range(0, values.size, _CHUNK_ELEMENTS):
                if should_stop():
                    raise Cancelled()
                out.write(values[i:i + _CHUNK_ELEMENTS].astype(numpy_value_dtype(new)).tobytes())
            spans[key] = (start, out.tell() - start)
    fd = os.open(scratch, os.O_RDONLY)
    try:
        for key, entry in archive.entries().items():
            if key in spans:
                offset, length = spans[key]
                index.add_from_file_handle(key, rt.FileHandle.wrap_fd(fd), length, offset)
            elif entry.is_splat:
                index.add_splat(key, bytes(entry.splat_pattern), entry.length)
            else:
                handle, offset = entry.file_storage
                index.add_from_file_handle(key, handle, entry.length, offset)
        dest.parent.mkdir(parents=True, exist_ok=True)
        index.create_archive_file(str(dest))
    finally:
        del index
        os.close(fd)
        scratch.unlink(missing_ok=True)
    return sorted(changed)


def declared_in(path: Path) -> Declared:
    """The parameters a snapshot's globals hold, with the type each global gives them."""
    return held_types(path.read_text(encoding="utf-8", errors="replace"))


def _text(shape: tuple[int, ...], element: str) -> str:
    return "x".join(map(str, shape)) + f"x{element}" if shape else element

