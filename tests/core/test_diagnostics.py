"""Diagnostics from iree-compile's own stderr: each error once, with its notes, at its line and column."""

from __future__ import annotations

import subprocess

from npu_studio.core.compile import toolchain
from npu_studio.core.ir.diagnostics import first_error_in, parse_diagnostics

BAD = """func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = arith.addf %a, %a : tensor<4xf32>
  %1 = tensor.extract %0[%a] : tensor<4xf32>
  return %0 : tensor<4xf32>
}
"""


def test_error_with_its_note_from_a_real_compile(tmp_path):
    path = tmp_path / "bad.mlir"
    path.write_text(BAD)
    proc = subprocess.run([str(toolchain.iree_compile()), str(path), "--compile-to=input", "-o", "/dev/null"],
                          capture_output=True, text=True)
    assert proc.returncode != 0
    diagnostics = parse_diagnostics(proc.stderr + proc.stderr)  # repeated output still lists it once
    assert len(diagnostics) == 1
    (d,) = diagnostics
    # Line 3, column of "%a" inside the brackets, counted by hand from BAD.
    assert (d.severity, d.line, d.col) == ("error", 3, BAD.splitlines()[2].index("%a]") + 1)
    assert [(n.line, n.col, n.message) for n in d.notes] == [(1, 14, "prior use here")]
    assert first_error_in(diagnostics, path.name) is d and first_error_in(diagnostics, "06.flow.mlir") is None
    assert d.text().splitlines()[1].endswith("bad.mlir:1:14: note: prior use here")
