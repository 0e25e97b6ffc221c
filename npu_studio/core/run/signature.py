"""Entry-point signatures read from a snapshot with the MLIR parser.

Modules imported from ONNX carry no ABI reflection in the vmfb, so the
input phase (where public functions still take plain tensors) tells us what
to feed them.
"""

from __future__ import annotations

import math
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from ..lazy_import import lazy_module

from ..dtypes import numpy_value_dtype
from ..errors import BadFile, RunFailed, StudioError
from ..textio import read_text

np = lazy_module("numpy")  # loaded on first use: not at the app's start


@dataclass(frozen=True)
class TensorSpec:
    shape: tuple[int | None, ...]  # None for a dynamic dim
    dtype: str  # MLIR element type, e.g. "f32"

    @property
    def numpy_dtype(self):
        dt = numpy_value_dtype(self.dtype)
        if dt is None:
            raise StudioError(None, f"no numpy dtype for element type {self.dtype}")
        return dt

    @property
    def nbytes(self) -> int | None:
        """Bytes of one tensor of this type; None with a dynamic dim."""
        if any(d is None for d in self.shape):
            return None
        return math.prod(self.shape) * self.numpy_dtype.itemsize

    def __str__(self) -> str:
        return "x".join("?" if d is None else str(d) for d in self.shape) + f"x{self.dtype}"


@dataclass(frozen=True)
class FunctionSignature:
    name: str
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]


def _spec(t) -> TensorSpec:
    from iree.compiler import ir

    rt = ir.RankedTensorType(t)
    shape = tuple(None if rt.is_dynamic_dim(i) else rt.shape[i] for i in range(rt.rank))
    return TensorSpec(shape, str(rt.element_type))


def public_functions(snapshot: Path, *, as_called: bool = False) -> list[FunctionSignature]:
    """Public entry points of `snapshot` with tensor-typed arguments and results.

    Works on plain tensor functions (an .mlir input) and on phases after
    `abi`, where arguments are `!hal.buffer_view`s: their tensor types are
    read off the `hal.tensor.import` / `hal.tensor.export` ops of the
    function (or of its `$async` twin, which does the work). Those give the
    types the program computes on; with `as_called`, the types the caller's
    buffer views must have (`hal.tensor.import ... -> tensor<4xf32> as
    tensor<4xf16>`: f32 after a demotion, while the program holds f16).
    """
    from iree.compiler import ir

    from ..ir.context import mlir_context

    with mlir_context():
        try:
            module = ir.Module.parse(read_text(snapshot))
        except ir.MLIRError as exc:
            first = next((d.message for d in exc.error_diagnostics), str(exc).splitlines()[0])
            raise BadFile(snapshot, f"cannot parse: {first}") from None
        funcs = {}
        for op in module.body.operations:
            op = op.operation
            if op.name in ("func.func", "util.func"):
                funcs[ir.StringAttr(op.attributes["sym_name"]).value] = op
        sigs = []
        for name, op in funcs.items():
            if name.endswith("$async") or _visibility(op) != "public":
                continue
            ftype = ir.FunctionType(ir.TypeAttr(op.attributes["function_type"]).value)
            if all(isinstance(t, ir.RankedTensorType) for t in [*ftype.inputs, *ftype.results]):
                sig = FunctionSignature(
                    name, tuple(_spec(t) for t in ftype.inputs), tuple(_spec(t) for t in ftype.results)
                )
            elif ftype.results and all(_TORCH_TENSOR.fullmatch(str(t)) for t in [*ftype.inputs, *ftype.results]):
                sig = FunctionSignature(name, tuple(_torch_spec(t) for t in ftype.inputs),
                                        tuple(_torch_spec(t) for t in ftype.results))
            else:
                sig = _abi_signature(name, funcs.get(name + "$async", op), as_called)
            if sig is not None:
                sigs.append(sig)
        return sigs


# A tensor of the torch-mlir ONNX importer's module: !torch.vtensor<[3,?,16],f32>
_TORCH_TENSOR = re.compile(r"!torch\.vtensor<\[([0-9?,\s-]*)\],(\w+)>")


def _torch_spec(t) -> TensorSpec:
    dims, dtype = _TORCH_TENSOR.fullmatch(str(t)).groups()
    shape = tuple(None if d.strip() in ("?", "-1") else int(d) for d in dims.split(",") if d.strip())
    return TensorSpec(shape, dtype)


def imported_signatures(snapshot: Path) -> list[FunctionSignature]:
    """The entry points of the module imported from ONNX beside a workspace's phase `snapshot`
    (its `imported.mlir`), or none. A model IREE folds to nothing (its entry point hands back
    its argument's buffer view, no `hal.tensor.import` or `export` left) keeps no tensor type
    in any phase: they are read here."""
    imported = Path(snapshot).parent.parent / "imported.mlir"
    if Path(snapshot).parent.name != "phases" or not imported.is_file():
        return []
    return public_functions(imported)


def _visibility(op) -> str:
    from iree.compiler import ir

    if "sym_visibility" not in op.attributes:
        return "public"
    return ir.StringAttr(op.attributes["sym_visibility"]).value


def _abi_signature(name: str, func, as_called: bool) -> FunctionSignature | None:
    from iree.compiler import ir

    inputs: dict[int, TensorSpec] = {}
    outputs: list[TensorSpec] = []
    entry = func.regions[0].blocks[0]

    def visit(op):
        if op.name == "hal.tensor.import" and isinstance(op.operands[0], ir.BlockArgument):
            arg = ir.BlockArgument(op.operands[0])
            if arg.owner == entry:
                inputs[arg.arg_number] = _spec(ir.TypeAttr(op.attributes["target_encoding"]).value
                                               if as_called else op.results[0].type)
        elif op.name == "hal.tensor.export":
            outputs.append(_spec(ir.TypeAttr(op.attributes["source_encoding"]).value
                                 if as_called else op.operands[0].type))
        return ir.WalkResult.ADVANCE

    func.walk(visit)
    buffer_args = [i for i, a in enumerate(entry.arguments) if "hal.buffer_view" in str(a.type)]
    if not outputs or sorted(inputs) != buffer_args:
        return None
    return FunctionSignature(name, tuple(inputs[i] for i in sorted(inputs)), tuple(outputs))


def read_npy_input(path: Path, spec: TensorSpec, what: str) -> np.ndarray:
    """Load one `.npy` input for `spec`: the one reader of every command's --input.

    Refused with a BadFile naming `path`, before anything is allocated or waited for: not a
    regular file (a FIFO named x.npy would block), an .npz archive, not a .npy file, pickled
    objects, a dtype or shape other than the signature's (`what` names the argument), a header
    claiming more bytes than the file holds, or more than fits in memory.
    """
    path = Path(path)
    try:
        # O_NONBLOCK: opening a FIFO returns at once (and is refused below) instead of waiting for a writer
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except IsADirectoryError:
        raise BadFile(path, "is a folder, not a .npy file") from None
    except ValueError:
        raise BadFile(path, "cannot read: a path cannot hold a NUL byte") from None
    except OSError as exc:
        raise BadFile(path, f"cannot read: {exc.strerror}") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        if stat.S_ISDIR(st.st_mode):
            raise BadFile(path, "is a folder, not a .npy file")
        raise BadFile(path, "not a regular file (a FIFO, socket or device); expected a .npy file")
    with open(fd, "rb") as f:
        try:
            if f.read(4) == b"PK\x03\x04":
                raise BadFile(path, "is an .npz archive (several arrays), not a .npy file: save each input "
                                    "with numpy.save and pass one --input per argument")
            f.seek(0)
            shape, dtype, data_offset = _npy_header(path, f)
            if dtype.hasobject:
                raise BadFile(path, "holds Python objects (a pickle); only plain numeric arrays are accepted")
            want = spec.numpy_dtype
            if dtype != want:
                raise BadFile(path, f"{what} wants {want} ({spec}), the file holds {dtype}")
            if len(shape) != len(spec.shape) or any(d is not None and d != n for d, n in zip(spec.shape, shape)):
                got = "x".join(map(str, shape)) or "a scalar"
                raise BadFile(path, f"{what} wants shape {spec}, the file holds {got}")
            if any(d < 0 for d in shape):
                raise BadFile(path, "not a .npy array file: a negative dimension")
            nbytes = math.prod(shape) * dtype.itemsize
            held = st.st_size - data_offset
            if nbytes > held:
                raise BadFile(path, f"header claims {nbytes} bytes of data but the file holds only {held}")
            check_fits_in_memory(nbytes, path, what)
            f.seek(0)
            return np.lib.format.read_array(f, allow_pickle=False)  # the file checked, not the path again
        except (ValueError, OSError, EOFError) as exc:
            raise BadFile(path, f"cannot load: {' '.join(str(exc).split())}") from None


def _npy_header(path: Path, f) -> tuple[tuple[int, ...], "np.dtype", int]:
    try:
        version = np.lib.format.read_magic(f)
        if version == (1, 0):
            shape, _fortran, dtype = np.lib.format.read_array_header_1_0(f)
        elif version == (2, 0):
            shape, _fortran, dtype = np.lib.format.read_array_header_2_0(f)
        else:
            raise ValueError(f"unsupported .npy format version {version[0]}.{version[1]}")
    except (ValueError, SyntaxError, TypeError, EOFError, RecursionError, MemoryError) as exc:
        raise BadFile(path, f"not a .npy array file: {' '.join(str(exc).split())[:200]}") from None
    return shape, dtype, f.tell()


def available_memory() -> int:
    """Bytes the kernel says can be allocated without swapping (MemAvailable)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def check_fits_in_memory(nbytes: int, path: Path | None, what: str, *, copies: int = 1) -> None:
    """Refuse, before allocating, a tensor of `nbytes` that (with `copies` alive at once) cannot fit in memory now."""
    free = available_memory()
    if nbytes * copies > free:
        raise RunFailed(path, f"{what} needs {nbytes} bytes"
                              + (f" ({copies} copies while it is made)" if copies > 1 else "")
                              + f", more than the {free} bytes of memory available")
