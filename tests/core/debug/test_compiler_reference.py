"""The compiler's own dispatch as the trace's second reference, for dispatches with no ONNX counterpart.

The truth is the dispatch this test perturbs itself (`tests/models/fault_edit`, applied with a
resume from the flow phase, as the CLI does): the trace must name exactly that dispatch. Models:
the encoder layer, whose LayerNorms IREE splits over two dispatches (#9 holds the first half
of the first one, #10 completes it), and a generated depthwise convolution whose first dispatch
copies the input into a padded buffer that the host filled in part (corpus regression seed-5000007),
and one copying into a max-pool's padded buffer (seed-9400034).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from npu_studio.core.debug.compiler_reference import site_mismatch
from npu_studio.core.debug.numerics_trace import trace
from npu_studio.core.workspace import edit_state
from npu_studio.core.workspace.workspace import Workspace, compile_model
from tests.models import fault_edit

from . import pairing_models as models

REGRESSIONS = Path(__file__).resolve().parents[2] / "models" / "regressions"


@pytest.fixture(scope="module")
def builds(tmp_path_factory):
    root = tmp_path_factory.mktemp("compiler_reference")
    return {"encoder": compile_model(models.encoder_layer(root / "encoder.onnx"), root / "encoder"),
            "pad_copy": compile_model(REGRESSIONS / "seed-5000007.onnx", root / "pad_copy"),
            "pool_pad_copy": compile_model(REGRESSIONS / "seed-9400034.onnx", root / "pool_pad_copy")}


def _perturbed(build, site: int, tmp_path) -> Workspace:
    shutil.copytree(build.root, tmp_path / "ws")
    ws = Workspace.open(tmp_path / "ws")
    flow = ws.snapshot_path("flow").read_text()
    edit_state.resume(ws, "flow", fault_edit.perturb(flow, site))  # keeps the compiler's original
    return ws


def _summary(report) -> str:
    return "\n".join(report.summary_lines())


def test_clean_build_is_judged_against_onnx_only(builds, tmp_path):
    report = trace(builds["encoder"], seed=3)
    text = _summary(report)
    assert report.ok and report.exit_code == 0, text
    assert all(d.compiler_dispatch is None for d in report.dispatches), text
    first_halves = [d.index for d in report.dispatches if d.partial_at is not None]
    assert 9 in first_halves, text  # the split this test relies on is still there
    assert not any("compiler's own" in n for n in report.notes), text


@pytest.mark.parametrize("site", [9, 10])
def test_either_half_of_a_split_layer_norm_is_named(builds, site, tmp_path):
    report = trace(_perturbed(builds["encoder"], site, tmp_path), seed=3)
    text = _summary(report)
    assert report.locate().dispatch == site and report.exit_code == 1, text
    first_half = report.dispatches[9]
    assert first_half.compiler_dispatch == 9 and first_half.departs == (site == 9), text
    if site == 9:
        assert "the compiler's own dispatch #9" in text, text
    else:  # the unperturbed first halves (#13 reads #10's descendants) agree with the compiler's own
        judged = [d for d in report.dispatches if d.compiler_dispatch is not None]
        assert len(judged) >= 2 and not any(d.departs for d in judged), text


@pytest.mark.parametrize("site", [0, 1])
def test_a_copy_into_a_buffer_written_in_part_is_named(builds, site, tmp_path):
    report = trace(_perturbed(builds["pad_copy"], site, tmp_path), seed=3)
    text = _summary(report)
    assert report.locate().dispatch == site, text


def test_a_copy_into_a_max_pool_padding_filled_with_the_float_maximum_is_named(builds, tmp_path):
    # #3 copies a conv's input into a buffer whose border the host filled with -FLT_MAX (the max-pool
    # padding): that fill is not a magnitude of the data, or every bound would be 3.4e38 (fuzz seed 9400034)
    report = trace(_perturbed(builds["pool_pad_copy"], 3, tmp_path), seed=3)
    assert report.locate().dispatch == 3 and report.dispatches[3].compiler_dispatch == 3, _summary(report)


def test_sites_are_matched_only_when_their_types_match(builds):
    flow = builds["encoder"].snapshot_path("flow").read_text()
    assert site_mismatch(fault_edit.perturb(flow, 9), flow) == ""  # a cloned executable, same sites
    other = builds["pad_copy"].snapshot_path("flow").read_text()
    why = site_mismatch(other, flow)
    assert why == (f"the edited flow has {len(fault_edit.sites(other))} dispatch sites, "
                   f"the compiler's {len(fault_edit.sites(flow))}")


@pytest.mark.parametrize("site", [9, 10])
def test_a_flow_edited_in_place_is_still_judged_against_the_compilers_own_dispatch(builds, site, tmp_path):
    # What `npu-studio resume phases/06.flow.mlir` does after a text editor saved the fault into the snapshot.
    shutil.copytree(builds["encoder"].root, tmp_path / "ws")
    ws = Workspace.open(tmp_path / "ws")
    snap = ws.snapshot_path("flow")
    snap.write_text(fault_edit.perturb(snap.read_text(), site))
    edit_state.resume(ws, "flow", snap.read_text())
    report = trace(ws, seed=3)
    text = _summary(report)
    assert report.locate().dispatch == site and report.exit_code == 1, text
    first_half = report.dispatches[9]
    assert first_half.compiler_dispatch == 9 and first_half.departs == (site == 9), text
