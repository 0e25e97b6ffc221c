"""Screenshot of the real window under Xvfb: resnet50 from the light zoo compiled, flow phase,
the NPU schedule dock with the costliest dispatch selected (its tasks highlighted).

    xvfb-run -a -s "-screen 0 1600x1000x24" .venv/bin/python docs/screenshots/take_screenshot.py

Needs Debian's xvfb xauth libxcb-icccm4 libxcb-keysyms1 libxcb-cursor0. Writes docs/screenshots/main.png.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))


def main() -> int:
    if os.environ.get("QT_QPA_PLATFORM", "xcb") != "xcb" or not os.environ.get("DISPLAY"):
        print("run this under xvfb-run (a real X display), see the docstring", file=sys.stderr)
        return 2
    from PySide6 import QtCore, QtWidgets

    import onnx

    from npu_studio.ui.main_window import MainWindow

    model = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light" / "light_resnet50.onnx"

    app = QtWidgets.QApplication([sys.argv[0]])
    tmp = Path(tempfile.mkdtemp(prefix="npu-studio-shot-"))
    settings = QtCore.QSettings(str(tmp / "settings.ini"), QtCore.QSettings.Format.IniFormat)
    window = MainWindow(settings)
    window.resize(1560, 940)
    window.move(20, 20)
    window.show()
    result = {}

    def wait_for_schedule():
        run = window.schedule_controller.run
        if run is None or not window.indexes.get("flow"):
            QtCore.QTimer.singleShot(500, wait_for_schedule)
            return
        window.show_phase("flow")
        window.schedule.raise_()
        costliest = max(run.model.rows, key=lambda r: r.cycles).dispatch
        window.select_dispatch(costliest)
        QtCore.QTimer.singleShot(1500, shoot)  # let every pending paint land

    def shoot():
        screen = window.screen()
        pixmap = screen.grabWindow(0, window.x(), window.y(), window.frameGeometry().width(),
                                   window.frameGeometry().height())
        out = Path(__file__).with_name("main.png")
        result["ok"] = pixmap.save(str(out))
        print(f"wrote {out} ({pixmap.width()}x{pixmap.height()})")
        app.quit()

    window.sig_compile_finished.connect(lambda ok: QtCore.QTimer.singleShot(500, wait_for_schedule)
                                        if ok else app.exit(1))
    window.open_path(model, tmp / "ws")
    QtCore.QTimer.singleShot(300_000, lambda: app.exit(3))
    code = app.exec()
    return 0 if code == 0 and result.get("ok") else (code or 1)


if __name__ == "__main__":
    sys.exit(main())
