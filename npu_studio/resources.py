"""The files shipped with the app: example models, NPU targets, the application icon.

They live in the repository's top-level resources/; `npu_studio/_resources` is a
link to it, so setuptools copies them into the wheel as package data and the
PyInstaller spec into the bundle. A checkout, an editable install, an installed
wheel and the bundle all read them through the package, the same way.
"""

from importlib.resources import files
from pathlib import Path

APP_ID = "dev.npustudio.NpuStudio"  # reverse-DNS id: desktop entry, metainfo, icon name

RESOURCES = Path(str(files("npu_studio") / "_resources"))
EXAMPLE_MODEL = RESOURCES / "examples" / "single_conv.onnx"
TARGETS_DIR = RESOURCES / "targets"
DOCS_DIR = Path(str(files("npu_studio") / "_docs"))  # the repository's docs/, linked like _resources
SWEEPS_DIR = RESOURCES / "sweeps"  # example sweep specs (docs/sweep.md)
ICONS_DIR = RESOURCES / "icons" / "hicolor"  # freedesktop icon-theme layout, installed as is
ICON_SVG = ICONS_DIR / "scalable" / "apps" / f"{APP_ID}.svg"
ICON_PNG_SIZES = (16, 24, 32, 48, 64, 128, 256)


def icon_png(size: int) -> Path:
    return ICONS_DIR / f"{size}x{size}" / "apps" / f"{APP_ID}.png"
