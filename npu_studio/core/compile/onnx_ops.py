"""ONNX op types by node name, so a dispatch can say `Conv n3` rather than just `n3`."""

from __future__ import annotations

from pathlib import Path

from .onnx_wire import model_bytes_without_large_data

_SMALL = 1024  # weights at least this big are skipped unread


def node_op_types(model: Path) -> dict[str, str]:
    """{node name: op type} of the model's main graph, read without its weights.

    Unnamed nodes get the name the importer gives them (`<OpType>_<index>`).
    Anything but a readable ONNX file gives {}.
    """
    model = Path(model)
    if model.suffix.lower() != ".onnx":
        return {}
    import onnx
    from google.protobuf.message import DecodeError

    try:
        data, _ = model_bytes_without_large_data(model, _SMALL)
        proto = onnx.ModelProto()
        proto.ParseFromString(data)
    except (OSError, ValueError, IndexError, DecodeError):  # a broken file: the names alone will do
        return {}
    return {node.name or f"{node.op_type}_{i}": node.op_type for i, node in enumerate(proto.graph.node)}


def node_label(name: str, op_types: dict[str, str]) -> str:
    """`Conv n3`; a name that already starts with its op type (`Conv_0`) stays as it is."""
    op = op_types.get(name)
    if not op or name.startswith(op):
        return name
    return f"{op} {name}"
