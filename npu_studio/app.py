"""The desktop app: `npu-studio-gui [FILE_OR_WORKSPACE]` or `python -m npu_studio [FILE]`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="npu-studio-gui", description="Open NPU Studio.")
    parser.add_argument("path", nargs="?", type=Path, help="model (.onnx, .mlir, .mlirbc) or workspace folder")
    parser.add_argument("--workspace", type=Path, help="workspace folder for the model")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    from PySide6 import QtWidgets

    from .ui.main_window import APP, ORG, MainWindow

    app = QtWidgets.QApplication.instance() or QtWidgets.QApplication([sys.argv[0]])
    app.setOrganizationName(ORG)
    app.setApplicationName(APP)
    app.setDesktopFileName("dev.npustudio.NpuStudio")
    window = MainWindow()
    window.show()
    if args.path is not None:
        window.open_path(args.path, args.workspace)
    return app.exec()


if __name__ == "__main__":
    sys.exit(main())
