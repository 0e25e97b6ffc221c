"""Parameter references in the IR view: tooltip and statistics read from the workspace's archive."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import numpy as np  # noqa: E402
import onnx  # noqa: E402
from onnx import numpy_helper  # noqa: E402
from PySide6 import QtCore, QtGui, QtWidgets  # noqa: E402

from npu_studio.core.compile.param_refs import refs_in_line  # noqa: E402
from npu_studio.core.workspace.workspace import compile_model  # noqa: E402
from npu_studio.ui.ir.ir_view import IrView  # noqa: E402
from npu_studio.ui.ir.param_view import install_parameter_view  # noqa: E402

from ..core.test_params import matmul_model  # noqa: E402


def test_hover_names_the_parameter_and_stats_match_the_onnx_weights(qtbot, tmp_path, monkeypatch):
    model = tmp_path / "proj.onnx"
    onnx.save(matmul_model(256, 128), str(model))
    ws = compile_model(model, tmp_path / "ws")
    weights = numpy_helper.to_array(onnx.load(str(model)).graph.initializer[0])

    view = IrView()
    qtbot.addWidget(view)
    view.resize(900, 500)
    view.show()
    qtbot.waitExposed(view)
    view.set_text(ws.snapshot_path("flow").read_text())
    handler = install_parameter_view(view, lambda: ws.params_path)

    lines = view.text().split("\n")
    line_no = next(i for i, ln in enumerate(lines) if refs_in_line(ln))
    (ref,) = refs_in_line(lines[line_no])
    view.goto(line_no + 1, ref.start + 3)
    rect = view.cursorRect()

    shown = []
    monkeypatch.setattr(QtWidgets.QToolTip, "showText", lambda pos, text, *a: shown.append(text))
    event = QtGui.QHelpEvent(QtCore.QEvent.Type.ToolTip, rect.center(), view.viewport().mapToGlobal(rect.center()))
    QtWidgets.QApplication.sendEvent(view.viewport(), event)
    assert shown and shown[0].startswith("W: 256x128xf32, 128.0 KiB") and "params.irpa" in shown[0]

    dialog = handler.open_stats(ref)
    with qtbot.waitSignal(dialog.sig_ready, timeout=20000):
        pass
    result = dialog.result
    assert result.minimum == weights.min() and result.maximum == weights.max()
    assert abs(result.mean - float(weights.astype(np.float64).mean())) < 1e-9
    assert int(result.histogram[0].sum()) == weights.size
    dialog.close()
