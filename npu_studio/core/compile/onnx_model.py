"""What the importer and the parameter archive both ask of an ONNX model.

Its external data files (found from the tensors' headers, without loading
any data) and the ONNX checker's message turned into one reason.
"""

from __future__ import annotations

from pathlib import Path

from .onnx_wire import model_bytes_without_large_data


def missing_external_data(model, folder: Path) -> str | None:
    from onnx.external_data_helper import _get_all_tensors, uses_external_data

    for tensor in _get_all_tensors(model):
        if uses_external_data(tensor):
            location = next((e.value for e in tensor.external_data if e.key == "location"), "")
            if not (folder / location).is_file():
                return location
    return None


def external_data_files(source: Path) -> list[Path]:
    """The external data files an ONNX model names (read without loading any data)."""
    import onnx
    from onnx.external_data_helper import _get_all_tensors, uses_external_data

    try:  # embedded weights are left out too: only the tensors' headers are needed
        model = onnx.ModelProto.FromString(model_bytes_without_large_data(source, 0)[0])
    except Exception:
        return []
    names = {next((e.value for e in t.external_data if e.key == "location"), "")
             for t in _get_all_tensors(model) if uses_external_data(t)}
    folder = Path(source).parent.resolve()
    files = {(folder / n).resolve() for n in names if n}
    return sorted(f for f in files if f.is_file() and f.is_relative_to(folder))


def checker_reason(message: str) -> str:
    first = next((ln for ln in message.splitlines() if ln.strip()), message)
    if "No Op registered for" in first or "No opset import for domain" in first:
        return f"unsupported op: {first.strip()}"
    return f"invalid ONNX model: {first.strip()}"
