"""ONNX -> MLIR import that keeps node names for provenance.

The `iree-import-onnx` CLI drops ONNX node names; the Python importer
printed with debug info keeps them as `loc("NodeName")`, so ops in later
phases can be traced back to the node they came from.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from .onnx_model import check_external_data, checker_reason, load_external_data, not_onnx_reason

if TYPE_CHECKING:
    from .params import ParamOptions

MLIR_SUFFIXES = (".mlir", ".mlirbc")
TARGET_OPSET = 17  # older opsets often fail to lower (e.g. BatchNormalization at 9)


@dataclass
class ImportResult:
    mlir_path: Path
    opset_before: int | None  # None for MLIR input
    opset_after: int | None
    renamed_nodes: int  # nodes that had no name and got one
    parameters: list = field(default_factory=list)  # params.Parameter moved to the archive


def import_model(source: Path, out_path: Path, params: "ParamOptions | None" = None) -> ImportResult:
    """Import `source` (.onnx, .mlir, .mlirbc) and write MLIR to `out_path`.

    MLIR files are copied as they are. With `params`, ONNX weights of at
    least `params.threshold_bytes` go to `params.ARCHIVE_NAME` next to
    `out_path` and the IR names them (see core/compile/params.py). Raises
    ImportFailed with a one-line reason naming `source`.
    """
    source = Path(source)
    _check_file(source)
    suffix = source.suffix.lower()
    if suffix in MLIR_SUFFIXES:
        from ..textio import decode, read_bytes

        data = read_bytes(source)
        if suffix == ".mlir":
            decode(data, source)  # BadFile with the line and byte offset of the first bad byte
        out_path = out_path.with_suffix(suffix)
        out_path.write_bytes(data)
        return ImportResult(out_path, None, None, 0)
    moved: list = []
    if params is None:
        model = load_onnx(source)
    else:
        from .params import ARCHIVE_NAME, load_with_archive

        model, moved = load_with_archive(source, out_path.parent / ARCHIVE_NAME, params)
    before = default_opset(model)
    model = upgrade_opset(model, source)
    renamed = name_unnamed_nodes(model)
    text = onnx_to_mlir_text(model, source, {p.name for p in moved})
    out_path.write_text(text)
    return ImportResult(out_path, before, default_opset(model), renamed, moved)


def _check_file(source: Path) -> None:
    from ..errors import ImportFailed

    if source.is_dir():
        raise ImportFailed(source, "is a folder, not a model file")
    if not source.is_file():
        raise ImportFailed(source, "no such file" if not source.exists() else
                           "is not a regular file (a FIFO, a device or a socket); expected a model file")
    if source.stat().st_size == 0:
        raise ImportFailed(source, "not an ONNX model: the file is empty" if source.suffix.lower() == ".onnx"
                           else "file is empty")
    suffix = source.suffix.lower()
    if suffix not in (*MLIR_SUFFIXES, ".onnx"):
        raise ImportFailed(source, f"unsupported file type {suffix or '(none)'}; expected .onnx, .mlir or .mlirbc")


def check_model_file(source: Path) -> None:
    """What can be known of a model file before any workspace is touched; raises ImportFailed.

    A file that is not one, of an unknown type, or whose ONNX protobuf or
    external data is broken (read without its weights: quick whatever its
    size). The compiler and the ONNX checker judge the rest during the import.
    """
    import onnx
    from google.protobuf.message import DecodeError

    from ..errors import ImportFailed
    from .onnx_wire import model_bytes_without_large_data

    source = Path(source)
    _check_file(source)
    if source.suffix.lower() != ".onnx":
        return
    try:
        model = onnx.ModelProto.FromString(model_bytes_without_large_data(source, 0)[0])
    except (ValueError, DecodeError) as exc:
        raise ImportFailed(source, not_onnx_reason(source, str(exc))) from None
    except OSError as exc:
        raise ImportFailed(source, f"cannot read ONNX model: {exc.strerror or exc}") from None
    check_external_data(model, source)


def load_onnx(source: Path):
    """Load and check an ONNX model; every failure becomes ImportFailed."""
    import onnx
    from google.protobuf.message import DecodeError

    from ..errors import ImportFailed

    try:
        with open(source, "rb") as f:  # a file object: onnx cannot take a name that is not UTF-8
            model = onnx.load(f, load_external_data=False)
    except DecodeError as exc:
        raise ImportFailed(source, not_onnx_reason(source, str(exc))) from None
    except Exception as exc:  # onnx raises a variety of types for unreadable files
        raise ImportFailed(source, f"cannot read ONNX model: {exc}") from None
    check_external_data(model, source)
    from onnx.external_data_helper import _get_all_tensors, uses_external_data

    try:
        for tensor in _get_all_tensors(model):
            if uses_external_data(tensor):
                load_external_data(tensor, source)
    except OSError as exc:
        raise ImportFailed(source, f"cannot read external data: {exc.strerror or exc}") from None
    if not model.graph.node and not model.graph.output:
        raise ImportFailed(source, "not a valid ONNX model (empty graph: corrupt or truncated file?)")
    try:
        onnx.checker.check_model(model)
    except onnx.checker.ValidationError as exc:
        raise ImportFailed(source, checker_reason(str(exc))) from None
    return model


def default_opset(model) -> int | None:
    for imp in model.opset_import:
        if imp.domain in ("", "ai.onnx"):
            return imp.version
    return None


def upgrade_opset(model, source: Path):
    """Convert to opset 17 when older; shape inference afterwards either way."""
    import onnx
    from onnx import version_converter

    from ..errors import ImportFailed

    current = default_opset(model)
    if current is not None and current < TARGET_OPSET:
        try:
            model = version_converter.convert_version(model, TARGET_OPSET)
        except Exception as exc:
            raise ImportFailed(source, f"cannot upgrade opset {current} to {TARGET_OPSET}: {exc}") from None
    try:
        return onnx.shape_inference.infer_shapes(model)
    except Exception as exc:
        raise ImportFailed(source, f"ONNX shape inference failed: {exc}") from None


def name_unnamed_nodes(model) -> int:
    """Give every unnamed node a stable name `<OpType>_<index>`; returns how many."""
    taken = {n.name for n in model.graph.node if n.name}
    renamed = 0
    for i, node in enumerate(model.graph.node):
        if node.name:
            continue
        name = f"{node.op_type}_{i}"
        while name in taken:
            name += "_"
        node.name = name
        taken.add(name)
        renamed += 1
    return renamed


def onnx_to_mlir_text(model, source: Path, parameters: set[str] = frozenset()) -> str:
    """The model as MLIR with node names as locations; `parameters` become named archive references."""
    from iree.compiler import ir
    from iree.compiler.extras import onnx_importer

    from ..errors import ImportFailed

    try:
        ctx = ir.Context()
        ctx.enable_multithreading(False)  # as core/ir/context.py: no parse or verify may hang
        info = onnx_importer.ModelInfo(model)
        module = info.create_module(context=ctx).operation
        if parameters:
            from .params import archive_importer

            imp = archive_importer(info, module, parameters)
        else:
            imp = onnx_importer.NodeImporter.define_function(info.main_graph, module)
        imp.import_all()
        module.verify()
        return module.get_asm(enable_debug_info=True)
    except Exception as exc:
        reason = " ".join(str(exc).split()) or type(exc).__name__
        raise ImportFailed(source, f"ONNX import to MLIR failed: {reason}") from None
