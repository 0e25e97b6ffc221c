"""Fitting a substituted executable to another build's buffer layout (ir/executable_interface, executables/rebase).

Truth: IREE's own dump of the same executable by the other build (compiled
here by the test with iree-compile), and the edit the test makes.
"""

from __future__ import annotations

import re

import pytest

from npu_studio.core.compile.options import target_flags
from npu_studio.core.compile.toolchain import iree_compile
from npu_studio.core.executables.catalog import list_executables
from npu_studio.core.executables.rebase import rebase_flags, substitution_flags
from npu_studio.core.ir.executable_interface import NotRebasable, rebase
from npu_studio.core.processes import run_child
from npu_studio.core.run.dispatches.iree_dispatches import dispatch_module_text
from npu_studio.core.workspace.workspace import compile_model

from . import trace_models as models

_SUBSPAN = re.compile(r"binding\((\d+)\) alignment\(\d+\) offset\(%(\w+)\) flags\(([^)]*)\)")


def _offsets(text: str) -> dict[int, tuple[int, str]]:
    """binding -> (byte offset, flags), read from the text with the constants' own definitions."""
    consts = dict(re.findall(r"%(\w+) = arith\.constant (\d+) : index", text))
    return {int(b): (int(consts[c]), flags) for b, c, flags in _SUBSPAN.findall(text)}


@pytest.fixture(scope="module")
def mlp(tmp_path_factory):
    d = tmp_path_factory.mktemp("mlp_rebase")
    ws = compile_model(models.mlp_bias(d / "mlp.onnx"), d / "ws")
    module = d / "dispatches.mlir"
    module.write_text(dispatch_module_text(ws.snapshot_path("flow").read_text()))
    base = [str(iree_compile()), str(module), *target_flags("llvm-cpu"), "--compile-from=flow"]
    dumps = d / "dumps"
    done = run_child([*base, "--compile-to=executable-sources", f"--iree-hal-dump-executable-sources-to={dumps}",
                      "-o", str(d / "upto.mlir")], timeout=300)
    assert done.returncode == 0, done.stderr
    info = next(e for e in list_executables(ws) if e.dispatches == [1])
    return ws, info, base, dumps / info.source.name


def test_offsets_and_flags_come_from_the_other_build(mlp, tmp_path):
    ws, info, base, target = mlp
    mine = info.source.read_text()
    theirs = target.read_text()
    assert _offsets(mine) != _offsets(theirs)  # the layouts differ: the case this is for
    edited = mine.replace("arith.addf %in", "arith.subf %in")
    fitted = rebase(edited, theirs, info.name)
    assert _offsets(fitted) == _offsets(theirs)
    assert "arith.subf" in fitted and "arith.addf" not in fitted  # the user's edit stays

    # the same through the flags a build gets: IREE compiles up to the swap and dumps
    sub = tmp_path / "sub.mlir"
    sub.write_text(edited)
    flag = f"--iree-hal-substitute-executable-source={info.name}={sub}"
    done = rebase_flags(base, ["--some-other-flag", flag], tmp_path / "work", what="the dispatch module")
    [(kind, name, path)] = substitution_flags(done.flags)
    assert (kind, name) == ("source", info.name) and not done.left_out
    assert _offsets(path.read_text()) == _offsets(theirs)


def test_an_executable_the_other_build_lacks_is_left_out_with_the_reason(mlp, tmp_path):
    ws, info, base, target = mlp
    sub = tmp_path / "sub.mlir"
    sub.write_text(info.source.read_text().replace(info.name, "not_in_that_build"))
    done = rebase_flags(base, [f"--iree-hal-substitute-executable-source=not_in_that_build={sub}"],
                        tmp_path / "work", what="the dispatch module")
    assert done.flags == [] and done.left_out == ["not_in_that_build"]
    assert "left out" in done.notes[0] and "no executable @not_in_that_build" in done.notes[0]


def test_other_buffers_are_refused(mlp):
    ws, info, base, target = mlp
    mine, theirs = info.source.read_text(), target.read_text()
    export = re.search(r"hal\.executable\.export public @([\w$]+)", theirs).group(1)
    with pytest.raises(NotRebasable, match="exports"):
        rebase(mine, theirs.replace(export, export + "_other"), info.name)


def test_a_shared_executable_reading_offsets_from_push_constants_is_fitted(tmp_path):
    # q, k, v and the output projection share one executable; the workspace's build passes
    # its three offsets as push constants, the traced build one, the dispatch module none.
    import numpy as np

    from npu_studio.core.debug.numerics_trace import trace
    from npu_studio.core.executables import substitution as subs
    from npu_studio.core.run.runner import pick_function, random_inputs, run_vmfb
    from npu_studio.core.workspace import substitutions as sub_records

    ws = compile_model(models.attention(tmp_path / "attention.onnx"), tmp_path / "ws")
    shared = max(list_executables(ws), key=lambda e: len(e.dispatches))
    text = shared.source.read_text()
    assert len(shared.dispatches) == 4 and "hal.interface.constant.load" in text
    subs.substitute(ws, shared.name, sub_records.SOURCE, text).run()
    sig = pick_function(ws.snapshot_path("input"))
    x = random_inputs(sig, 1)
    [built] = run_vmfb(ws.vmfb_path, sig.name, x)  # IREE's own build with the substitution
    for method in ("dispatches", "tensor-trace"):
        report = trace(ws, x, method=method)
        assert any(shared.name in n and "fitted" in n for n in report.notes), report.notes
        assert report.first_divergent is None and report.ok
        if method == "dispatches":  # the compiler's own (plain) dispatches judge the unpaired ones
            assert any(n.startswith(f"{shared.name} substituted: ") and "compiler's own dispatch module" in n
                       for n in report.notes), report.notes
        np.testing.assert_allclose(report.values[0], built, rtol=1e-5, atol=1e-6)
