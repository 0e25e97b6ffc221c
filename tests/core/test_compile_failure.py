"""One line for a failed iree-compile run, shared by the dispatch module, traced and fitted builds."""

from __future__ import annotations

from npu_studio.core.compile.toolchain import compile_failure, iree_compile


def test_a_compile_failure_is_the_compilers_first_error_line(tmp_path):
    good, bad = tmp_path / "good.mlir", tmp_path / "bad.mlir"
    good.write_text("module {}\n")
    bad.write_text("module {\n  func.func @f() {\n    %0 = arith.constant 1 : i32\n  }\n}\n")  # no terminator
    assert compile_failure([str(iree_compile()), str(good), "--compile-to=input", "-o", str(tmp_path / "o")], 60) \
        is None
    why = compile_failure([str(iree_compile()), str(bad), "--compile-to=input", "-o", str(tmp_path / "o")], 60)
    assert why is not None and "\n" not in why
    assert why.startswith(f"{bad}:") and "error" in why and "terminator" in why  # what MLIR itself reports


def test_a_compile_that_runs_out_of_time_says_so(tmp_path):
    script = tmp_path / "slow"
    script.write_text("#!/bin/sh\nsleep 30\n")
    script.chmod(0o755)
    assert compile_failure([str(script)], 0.5) == "did not finish in 0.5 s"
