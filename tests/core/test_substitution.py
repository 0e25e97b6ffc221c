"""Executable substitution on the example (core/executables/substitution.py, numeric_gate.py, kernel_timing.py).

Every rebuild is a compile, so each test is one flow over a private copy of
the session's compiled example. Truths: IREE's own runtime output of the
plain build, the ONNX model's bias initializer, the compiler's "substituted"
note and its own dumps, the line and column of the edit we made.
"""

from __future__ import annotations

import hashlib
import subprocess

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from npu_studio.core.compile.compiler import build_command
from npu_studio.core.compile.options import CompileOptions
from npu_studio.core.executables import substitution as subs
from npu_studio.core.executables.catalog import list_executables
from npu_studio.core.run.kernel_timing import time_substitution
from npu_studio.core.run.numeric_gate import gate_substitution
from npu_studio.core.run.runner import pick_function, random_inputs, run_vmfb
from npu_studio.core.workspace import substitutions as sub_records
from npu_studio.core.workspace.workspace import Workspace

from ..conftest import EXAMPLE


def _sha(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _outputs(ws, vmfb=None):
    sig = pick_function(ws.snapshot_path("input"))
    return run_vmfb(vmfb or ws.vmfb_path, sig.name, random_inputs(sig, 0), parameters=ws.params_path)[0]


def _subf_bias(text: str) -> str:
    """The bias add is the last `arith.addf %in, %in_1` of the source (the conv body adds to %out)."""
    i = text.rfind("arith.addf %in, %in_1")
    assert i > 0
    return text[:i] + "arith.subf" + text[i + len("arith.addf"):]


def _line_col(text: str, needle: str) -> tuple[int, int]:
    at = text.index(needle)
    return text.count("\n", 0, at) + 1, at - text.rfind("\n", 0, at)


def _hal_executable_names(path) -> set[str]:
    from iree.compiler import ir

    with ir.Context():
        module = ir.Module.parse(path.read_text())
        return {ir.StringAttr(op.operation.attributes["sym_name"]).value
                for op in module.body.operations if op.operation.name == "hal.executable"}


def test_executables_are_listed_with_their_dispatch_node_and_substitution_name(example_workspace):
    [info] = list_executables(example_workspace)
    # the name IREE matches for substitution is the hal.executable symbol of the hal phase
    assert {info.name} == _hal_executable_names(example_workspace.snapshot_path("hal"))
    assert info.dispatches == [0]
    assert info.onnx_nodes == [n.name for n in onnx.load(str(EXAMPLE)).graph.node]
    assert info.ops.startswith("conv 8x498x498x3x3x3 f32")
    assert "lowering_config" in info.configuration.read_text()
    assert info.source.read_text().lstrip().startswith(f"hal.executable public @{info.name}")
    assert info.benchmark is not None


def test_unedited_source_is_bit_identical_and_bias_sub_moves_outputs_by_twice_the_bias(fresh_example):
    ws = fresh_example
    [info] = list_executables(ws)
    name, source = info.name, info.source.read_text()
    plain_out = _outputs(ws)

    # unedited: bit-identical, and the report says so
    result = subs.substitute(ws, name, sub_records.SOURCE, source).run()
    assert result.from_phase == subs.REBUILD_FROM[sub_records.SOURCE] == "stream"
    assert f"hal.executable `{name}` substituted" in result.stderr
    report = gate_substitution(ws, name, sub_records.SOURCE)
    assert report.bit_identical and report.passed
    assert "bit-identical" in report.format()
    assert np.array_equal(_outputs(ws), plain_out)

    # bias add -> sub: every output moves by exactly -2 x its channel's bias
    subs.substitute(ws, name, sub_records.SOURCE, _subf_bias(source)).run()
    bias = numpy_helper.to_array(next(i for i in onnx.load(str(EXAMPLE)).graph.initializer if i.name == "bias"))
    sub_out = _outputs(ws)
    ulp = float(np.spacing(np.float32(np.abs(plain_out).max() + 2 * np.abs(bias).max())))
    np.testing.assert_allclose(sub_out.astype(np.float64) - plain_out, np.broadcast_to(
        -2.0 * bias[None, :, None, None].astype(np.float64), plain_out.shape), rtol=0, atol=2 * ulp)
    report = gate_substitution(ws, name, sub_records.SOURCE, tolerance=1e-5)
    assert not report.passed and "FAIL" in report.format()
    out = report.outputs[0]
    assert out.outside == out.total == plain_out.size
    assert out.max_abs == pytest.approx(2 * np.abs(bias).max(), abs=2 * ulp)
    # measured against the output's scale (its largest |plain|); the worst elements sit in the channel
    # of the largest |bias|
    assert out.scale == np.abs(plain_out).max()
    assert out.rel_error == pytest.approx(2 * np.abs(bias).max() / np.abs(plain_out).max(), rel=1e-5)
    assert len(out.worst) == 5 and {w.index[1] for w in out.worst} == {int(np.abs(bias).argmax())}
    assert sub_records.find(ws, name, sub_records.SOURCE).verdict["passed"] is False


def test_rejected_and_failed_edits_keep_the_text_and_the_build_and_substitutions_persist(fresh_example):
    ws = fresh_example
    [info] = list_executables(ws)
    name, source = info.name, info.source.read_text()
    subs.substitute(ws, name, sub_records.SOURCE, source).run()
    good_vmfb = _sha(ws.vmfb_path)

    # a syntax error: rejected at its line and column before any build; text kept; build untouched
    broken = source.replace("arith.mulf %in, %in_1", "arith.mulf %in %in_1", 1)
    line, col = _line_col(broken, "%in %in_1")
    with pytest.raises(subs.SubstitutionError) as e:
        subs.substitute(ws, name, sub_records.SOURCE, broken)
    # the parser points at the end of `%in`, where the comma is missing
    assert (e.value.line, e.value.col) == (line, col + len("%in"))
    assert subs.draft_path(ws, name, sub_records.SOURCE).read_text() == broken
    assert _sha(ws.vmfb_path) == good_vmfb

    # parses, but the compiler rejects it: its error at the line:col of the user's text
    bad_type = source.replace("tensor<8x498x498xf32>>", "tensor<8x498x497xf32>>")
    store_line, store_col = _line_col(bad_type, "iree_tensor_ext.dispatch.tensor.store")
    with pytest.raises(subs.SubstitutionError) as e:
        subs.substitute(ws, name, sub_records.SOURCE, bad_type).run()
    assert (e.value.line, e.value.col) == (store_line, store_col)
    assert subs.draft_path(ws, name, sub_records.SOURCE).read_text() == bad_type
    assert _sha(ws.vmfb_path) == good_vmfb
    assert _outputs(ws).shape == (1, 8, 498, 498)  # the previous build still runs

    # close and reopen: the substitution is listed and a later resume applies it again
    ws = Workspace.open(ws.root)
    [sub] = sub_records.load(ws)
    assert (sub.name, sub.kind, sub.applied) == (name, sub_records.SOURCE, True)
    assert sub.error is not None and sub.draft is not None  # the failed text is still offered
    resumed = ws.resume("flow")
    assert f"hal.executable `{name}` substituted" in resumed.stderr


def test_configuration_with_other_tile_sizes_gives_identical_numbers_and_timings(fresh_example):
    ws = fresh_example
    [info] = list_executables(ws)
    config = info.configuration.read_text()
    old = "distribution = [0, 8, 6, 6, 0, 0, 0]"
    assert old in config
    edited = config.replace(old, "distribution = [0, 8, 12, 12, 0, 0, 0]")
    result = subs.substitute(ws, info.name, sub_records.CONFIGURATION, edited).run()
    assert result.from_phase == "executable-sources"
    # IREE's own benchmark dump of the new build carries the new tiles
    [bench] = (ws.root / "executables" / "benchmarks").glob("*.mlir")
    assert "distribution = [0, 8, 12, 12, 0, 0, 0]" in bench.read_text()
    plain = subs.plain_build(ws)
    report = gate_substitution(ws, info.name, sub_records.CONFIGURATION, plain_folder=plain)
    assert report.bit_identical
    # iree-benchmark-module repeats each until its spread settles (10 to 20 repetitions here)
    timing = time_substitution(ws, info.name, plain, repetitions=10, max_repetitions=20, min_time=0.01,
                               whole_model=False)
    assert not timing.note
    quartiles = []
    for t in (timing.plain, timing.substituted):
        assert 10 <= len(t.samples_ms) <= 20 and all(s > 0 for s in t.samples_ms)
        q1, median, q3 = np.percentile(t.samples_ms, [25, 50, 75])  # numpy's linear rule = inclusive quartiles
        assert t.spread == pytest.approx((q3 - q1) / median)
        assert (t.stopped == "settled") == ((q3 - q1) / median <= 0.10)
        assert t.stopped == "settled" or len(t.samples_ms) == 20 or t.seconds >= 30
        quartiles.append((q1, q3))
    (p1, p3), (s1, s3) = quartiles
    settled = timing.plain.stopped == "settled" and timing.substituted.stopped == "settled"
    # the rule (run/kernel_timing.difference): a difference is measurable only between settled timings whose
    # interquartile ranges do not overlap
    assert timing.kernel_difference.measurable == (settled and (p3 < s1 or s3 < p1))
    assert timing.ratio == pytest.approx(timing.substituted.median_ms / timing.plain.median_ms)

    # switched off: IREE's dump shows the old tiles again; removed: gone from the manifest, its file kept
    subs.set_enabled(ws, info.name, sub_records.CONFIGURATION, False).run()
    assert old in bench.read_text()
    [sub] = sub_records.load(ws)
    assert subs.remove(ws, info.name) is None  # it was off: nothing to rebuild
    assert sub_records.load(ws) == [] and (ws.root / sub.file).is_file()


def test_rebuild_phases_are_the_latest_that_still_apply_the_substitution(example_workspace, tmp_path):
    """From the phase after REBUILD_FROM, IREE no longer substitutes (it does from REBUILD_FROM: above)."""
    from npu_studio.core.compile.phases import PHASES

    ws = example_workspace
    [info] = list_executables(ws)
    for kind, text_path in ((sub_records.SOURCE, info.source), (sub_records.CONFIGURATION, info.configuration)):
        later = PHASES[PHASES.index(subs.REBUILD_FROM[kind]) + 1]
        options = CompileOptions(from_phase=later, extra_flags=(f"{sub_records.FLAGS[kind]}={info.name}={text_path}",))
        cmd = build_command(ws.snapshot_path(later), tmp_path / kind, tmp_path / f"{kind}.vmfb", options)
        proc = subprocess.run(cmd, capture_output=True, text=True, check=True)
        assert "substituted" not in proc.stderr


def test_name_checks_before_any_build(fresh_example):
    ws = fresh_example
    [info] = list_executables(ws)
    text = info.source.read_text()
    with pytest.raises(subs.SubstitutionError, match="no executable @nope"):
        subs.substitute(ws, "nope", sub_records.SOURCE, text)
    other = text.replace(f"@{info.name} ", "@renamed ", 1)
    line, col = _line_col(other, "@renamed")
    with pytest.raises(subs.SubstitutionError, match="defines hal.executable @renamed, not @") as e:
        subs.substitute(ws, info.name, sub_records.SOURCE, other)
    assert (e.value.line, e.value.col) == (line, col)
    assert ws.manifest.command == Workspace.open(ws.root).manifest.command  # nothing compiled


def test_reimporting_the_model_keeps_its_substitutions(fresh_example):
    ws = fresh_example
    [info] = list_executables(ws)
    typo = info.source.read_text().replace("arith.mulf %in, %in_1", "arith.mulf %in %in_1", 1)
    with pytest.raises(subs.SubstitutionError):
        subs.substitute(ws, info.name, sub_records.SOURCE, typo)
    again = Workspace.create(EXAMPLE, ws.root)  # what opening the model file again does
    [sub] = sub_records.load(again)
    assert (sub.name, sub.kind) == (info.name, sub_records.SOURCE)
    assert subs.draft_path(again, info.name, sub_records.SOURCE).read_text() == typo
    assert not any(p.name.startswith(".") for p in ws.root.parent.iterdir())  # nothing left beside it
