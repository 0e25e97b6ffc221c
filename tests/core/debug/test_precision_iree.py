"""`precision` on what IREE makes of a demotion: archived weights, builds IREE cannot link, modules it cannot run.

Truths: IREE's own tools run by the test (`iree-compile` on the imported
module with the demotion flag; `iree-run-module` on the demoted module and
on IREE's own `--iree-flow-break-dispatch` builds of the same variant, with
a parameter archive the test writes itself from the ONNX weights cast by
numpy), and onnxruntime with the intermediate tensors made graph outputs by
the test.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from iree.compiler.tools.binaries import find_tool
from onnx import numpy_helper

from npu_studio.cli import main as cli_main
from npu_studio.core.compile.params import ParameterArchive
from npu_studio.core.debug.dispatch_break import NO_CONST_EVAL, SYNC_ENTRY, break_after
from npu_studio.core.debug.precision import DEMOTIONS, precision
from npu_studio.core.run.runner import pick_function, random_inputs
from npu_studio.core.workspace import variants
from npu_studio.core.workspace.workspace import Workspace, compile_model

from . import precision_models as models

F16 = DEMOTIONS["f16"][0]
RUN_MODULE = str(Path(sys.executable).parent / "iree-run-module")


def _onnxruntime(model_path: Path, x: np.ndarray, names: list[str]) -> dict[str, np.ndarray]:
    """The model's tensors `names`, made graph outputs here, computed by onnxruntime."""
    import onnxruntime as ort

    model = onnx.load(str(model_path))
    inferred = onnx.shape_inference.infer_shapes(model)
    infos = {v.name: v for v in [*inferred.graph.value_info, *inferred.graph.output]}
    del model.graph.output[:]
    model.graph.output.extend(infos[n] for n in names)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return dict(zip(names, session.run(None, {"x": x})))


def _run_module(vmfb: Path, function: str, x: np.ndarray, tmp: Path, params: Path | None = None):
    """iree-run-module on `vmfb`: (exit code, stderr, its output or None)."""
    np.save(tmp / "x.npy", x)
    out = tmp / "out.npy"
    out.unlink(missing_ok=True)
    cmd = [RUN_MODULE, f"--module={vmfb}", f"--function={function}", f"--input=@{tmp / 'x.npy'}",
           f"--output=@{out}", "--device=local-task"]
    if params is not None:
        cmd.append(f"--parameters=model={params}")
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    return done.returncode, done.stderr, np.load(out) if done.returncode == 0 else None


def _f16_archive(model_path: Path, dest: Path) -> Path:
    """The model's archived weights cast to f16 by numpy, in an archive written with IREE's runtime."""
    import iree.runtime as rt

    index = rt.ParameterIndex()
    for t in onnx.load(str(model_path)).graph.initializer:
        if t.name.endswith(".weight"):
            index.add_buffer(t.name, numpy_helper.to_array(t).astype(np.float16).reshape(-1))
    index.create_archive_file(str(dest))
    return dest


@pytest.mark.slow
def test_f16_with_archived_weights_runs_and_matches_break_builds(tmp_path):
    model = models.archived_mlp(tmp_path / "mlp.onnx")
    ws = compile_model(model, tmp_path / "ws")
    # the importer put both matrices in the archive (the bias stays inline)
    assert sorted(ParameterArchive(ws.params_path).names()) == ["a.weight", "b.weight"]
    x = random_inputs(pick_function(ws.snapshot_path("input")), 4)[0]
    report = precision(ws, ["f16"], [x])
    [r] = report.results
    assert r.verdict == "ok" and r.ran, "\n".join(report.summary_lines())
    built = variants.resolve(ws, r.variant)
    assert built.params_path == ws.root / "variants" / "demote-f16" / "params.irpa"

    # IREE's own module of the variant, run by iree-run-module with the test's f16 archive, against onnxruntime
    ours = _f16_archive(model, tmp_path / "f16.irpa")
    ref = _onnxruntime(model, x, ["r", "y"])
    code, err, y = _run_module(built.vmfb_path, "archived_mlp", x.astype(np.float16), tmp_path, ours)
    assert code == 0, err
    assert r.vs_f32[0].max_abs_error > 0  # it computed in f16
    assert np.abs(y.astype(np.float64) - ref["y"]).max() == pytest.approx(r.trace.outputs[0].max_abs_error,
                                                                          rel=1e-6, abs=1e-7)

    # Dispatches #0 and #1 against IREE's break builds of the same variant (demotion flag and all)
    by_index = {d.index: d for d in r.trace.dispatches}
    for index, tensor in ((0, "r"), (1, "y")):
        name = f"check-break-{index}"
        variants.create(ws, name, [F16, SYNC_ENTRY, NO_CONST_EVAL,
                                   f"--iree-flow-break-dispatch=@archived_mlp:{index}"])
        broken = variants.build(ws, name).build
        code, err, out = _run_module(broken.vmfb_path, "archived_mlp", x.astype(np.float16), tmp_path, ours)
        assert code == 0, err
        assert out.dtype == np.float16
        truth = np.abs(out.astype(np.float64) - ref[tensor]).max()
        d = by_index[index]
        assert d.onnx_tensor == tensor
        assert d.max_abs_error == pytest.approx(truth, rel=1e-6, abs=1e-7)
        assert 0 < truth < 1e-2 * np.abs(ref[tensor]).max()  # an f16 error, not a wrong-sized weight's
    # `trace --break` of the variant (dispatch_break) builds the same break and finds the same error
    result = break_after(ws, 1, [x], build=r.variant)
    assert result.variant == "demote-f16.break-1"
    assert result.dispatch.max_abs_error == pytest.approx(by_index[1].max_abs_error, rel=1e-6, abs=1e-7)


def test_softmax_f16_is_iree_link_failure_with_flag_and_kept_reproducer(tmp_path, capsys):
    ws = compile_model(models.matmul_softmax(tmp_path / "sm.onnx"), tmp_path / "ws")
    # IREE's own compiler on the same module with the same flag: it fails, and this is its first error line
    options = ws.compile_options()
    done = subprocess.run([find_tool("iree-compile"), str(ws.imported_path), *options.flags(), F16,
                           "-o", str(tmp_path / "m.vmfb")], capture_output=True, text=True, timeout=300)
    assert done.returncode != 0
    iree_first = next(ln.strip() for ln in done.stderr.splitlines() if "error:" in ln)
    assert "undefined symbol: fmaxf" in iree_first

    code = cli_main(["precision", str(ws.root), "--demote", "f16"])
    out = capsys.readouterr().out
    assert code == 3, out
    assert f"IREE cannot build it with {F16} {SYNC_ENTRY}: {iree_first}" in out
    assert "OK" not in out.split() and "DEPARTS" not in out
    line = next(ln for ln in out.splitlines() if "crash reproducer:" in ln)
    reproducer = ws.root / line.split("crash reproducer:")[1].strip()
    assert reproducer.is_file() and reproducer.parent == ws.root / "variants" / "demote-f16"
    assert "hal.executable" in reproducer.read_text()
    assert not list(ws.root.glob(".staging-*"))
    variants.remove(Workspace.open(ws.root), "demote-f16")  # the reproducer is the variant's: it goes with it
    assert not reproducer.exists()


def test_depthwise_f16_that_iree_cannot_run_is_a_run_failure(tmp_path, capsys, monkeypatch):
    # IREE 3.13's f16 demotion with its async entry point (which `precision` avoids by default) gives a
    # module IREE's runtime refuses: a real failure of IREE's, reported as such, never OK.
    from npu_studio.core.debug import precision as precision_module

    monkeypatch.setitem(precision_module.DEMOTIONS, "f16", (F16,))
    ws = compile_model(models.depthwise_block(tmp_path / "dw.onnx"), tmp_path / "ws")
    x = random_inputs(pick_function(ws.snapshot_path("input")), 0)[0]
    code = cli_main(["precision", str(ws.root), "--demote", "f16", "--json"])
    import json

    data = json.loads(capsys.readouterr().out)
    assert code == 3
    [r] = data["results"]
    assert r["verdict"] == "iree-cannot-run" and not r["ok"] and not r["module_ran"]
    failure = r["iree_failure"]
    assert failure["stage"] == "run" and failure["flags"] == [F16]
    # IREE's own runner: the f32 build runs, the demoted one does not, for the reason reported
    code, err, _ = _run_module(ws.vmfb_path, "depthwise_block", x, tmp_path)
    assert code == 0, err
    demoted = variants.resolve(Workspace.open(ws.root), r["variant"]).vmfb_path
    code, err, _ = _run_module(demoted, "depthwise_block", x, tmp_path)
    assert code != 0
    assert "exceeds backing buffer" in err and "exceeds backing buffer" in failure["message"]
    assert failure["message"].split(";")[1].strip() in err  # the same numbers: "buffer view byte length ..."
    # its dispatches still ran: per-dispatch errors are reported beside the failure
    assert r["trace"] is not None and r["trace"]["dispatches"]


def test_depthwise_f16_builds_the_sync_entry_point_and_runs(tmp_path, capsys):
    ws = compile_model(models.depthwise_block(tmp_path / "dw.onnx"), tmp_path / "ws")
    x = random_inputs(pick_function(ws.snapshot_path("input")), 0)[0]
    cli_main(["precision", str(ws.root), "--demote", "f16", "--json"])
    import json

    [r] = json.loads(capsys.readouterr().out)["results"]
    assert r["module_ran"] and r["verdict"] in ("ok", "departs"), r
    # IREE's own runner takes the variant's module (f16 in, f16 out) as it is
    demoted = variants.resolve(Workspace.open(ws.root), r["variant"])
    code, err, out = _run_module(demoted.vmfb_path, "depthwise_block", x.astype(np.float16), tmp_path,
                                 demoted.params_path)
    assert code == 0, err
    assert out.dtype == np.float16
