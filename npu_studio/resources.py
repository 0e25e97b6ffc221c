"""Paths of the files in resources/ (the repository's, next to the package)."""

from pathlib import Path

RESOURCES = Path(__file__).resolve().parents[1] / "resources"
EXAMPLE_MODEL = RESOURCES / "examples" / "single_conv.onnx"
TARGETS_DIR = RESOURCES / "targets"
