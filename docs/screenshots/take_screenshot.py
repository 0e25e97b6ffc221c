"""The README's screenshots, from `npu-studio --screenshot` in a real X window (Xvfb):
resnet50 from the ONNX light zoo, every dock open, at 1600x1000 and at 1280x800.

    make screenshot      (xvfb-run -a -s "-screen 0 1600x1000x24" .venv/bin/python docs/screenshots/take_screenshot.py)

The first shot compiles the model into a temporary workspace; the second reopens it (nothing
compiles). Writes docs/screenshots/main-1600x1000.png and main-1280x800.png, and the first
again as main.png (the AppStream screenshot, packaging/linux/*.metainfo.xml).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SIZES = ("1600x1000", "1280x800")


def main() -> int:
    if os.environ.get("QT_QPA_PLATFORM", "xcb") != "xcb" or not os.environ.get("DISPLAY"):
        print("run this under xvfb-run (a real X display), see the docstring", file=sys.stderr)
        return 2
    import onnx

    model = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light" / "light_resnet50.onnx"
    with tempfile.TemporaryDirectory(prefix="npu-studio-shot-") as tmp:
        env = dict(os.environ, NPU_STUDIO_CONFIG=str(Path(tmp) / "config"))
        for size in SIZES:
            out = HERE / f"main-{size}.png"
            cmd = [sys.executable, "-m", "npu_studio", "--screenshot", str(out), "--size", size, "--all-docks",
                   "--phase", "flow", "--workspace", str(Path(tmp) / "ws"), str(model)]
            done = subprocess.run(cmd, env=env)
            if done.returncode != 0:
                return done.returncode
    shutil.copy(HERE / f"main-{SIZES[0]}.png", HERE / "main.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
