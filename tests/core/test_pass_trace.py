"""The passes inside a phase, checked against iree-compile's own --mlir-print-ir-after-all."""

from __future__ import annotations

import re
import subprocess

import pytest

from npu_studio.cli import main as cli_main
from npu_studio.core.compile import toolchain
from npu_studio.core.compile.options import target_flags
from npu_studio.core.debug.pass_trace import PassTraceJob

_AFTER = re.compile(r"^// -----// IR Dump After (\S+?):? ")


def dumps_by_hand(input_path, source: str, phase: str, target: str = "llvm-cpu",
                  keep: int = 4000) -> list[tuple[str, str]]:
    """(pass name, first `keep` lines) of every --mlir-print-ir-after-all dump, from iree-compile run directly."""
    cmd = [str(toolchain.iree_compile()), str(input_path), *target_flags(target)]
    if source != "start":
        cmd.append(f"--compile-from={source}")
    cmd += [f"--compile-to={phase}", "--mlir-print-ir-after-all", "--mlir-elide-elementsattrs-if-larger=16",
            "-o", "/dev/null"]
    dumps: list[tuple[str, list[str]]] = []
    with subprocess.Popen(cmd, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True) as proc:
        for line in proc.stderr:
            m = _AFTER.match(line)
            if m:
                dumps.append((m.group(1), []))
            elif dumps and len(dumps[-1][1]) < keep:
                dumps[-1][1].append(line)
    assert proc.returncode == 0
    return [(name, "".join(body)) for name, body in dumps]


@pytest.fixture(scope="module")
def flow_trace(example_workspace, tmp_path_factory):
    import shutil

    from npu_studio.core.workspace.workspace import Workspace

    root = tmp_path_factory.mktemp("passes") / "ws"
    shutil.copytree(example_workspace.root, root)
    ws = Workspace.open(root)
    seen = []
    return ws, PassTraceJob(ws, "flow", on_progress=seen.append).run(), seen


def test_flow_pass_list_matches_iree_compiles_own_dump(flow_trace):
    ws, trace, progress = flow_trace
    by_hand = dumps_by_hand(ws.snapshot_path("dispatch-creation"), "dispatch-creation", "flow")
    assert len(trace.passes) == len(by_hand) > 20
    assert sorted(p.name for p in trace.passes) == sorted(name for name, _ in by_hand)
    assert progress[-1] == len(by_hand)
    ops = {p.op for p in trace.passes}
    assert "builtin.module" in ops and "util.func @SingleConv$async" in ops


def test_unchanged_passes_hide_and_each_changed_one_has_a_diff(flow_trace):
    _, trace, _ = flow_trace
    changed = trace.changed()
    assert 0 < len(changed) < len(trace.passes)
    for p in changed:
        assert trace.diff(p).changed
    for p in [p for p in trace.passes if not p.changed][:5]:
        assert not trace.diff(p).changed and trace.text(p, "before") == trace.text(p, "after")


def test_search_finds_the_pass_that_introduces_flow_dispatch(flow_trace):
    ws, trace, _ = flow_trace
    found = trace.first_output_containing("flow.dispatch", introduced=True)
    # The truth: the first dump iree-compile prints whose IR holds a flow.dispatch op.
    by_hand = dumps_by_hand(ws.snapshot_path("dispatch-creation"), "dispatch-creation", "flow")
    first = next(name for name, body in by_hand if re.search(r"flow\.dispatch @", body))
    assert found is not None and found.name == first == "OutlineDispatchRegionsPass"
    assert any(line.startswith("+") and "flow.dispatch @" in line for line in found_diff_lines(trace, found))
    assert trace.first_changing_symbol("@SingleConv$async_dispatch_0").index == found.index
    assert [p.name for p in trace.grep_names("outline-dispatch-regions")] == ["OutlineDispatchRegionsPass"]


def found_diff_lines(trace, record) -> list[str]:
    return trace.diff(record).unified().splitlines()


def test_cached_trace_is_reused_and_cli_lists_and_shows(flow_trace, capsys):
    ws, trace, _ = flow_trace
    again = PassTraceJob(ws, "flow").run()
    assert again.passes == trace.passes
    assert cli_main(["passes", str(ws.root), "flow", "--changed-only"]) == 0
    out = capsys.readouterr().out
    assert f"{len(trace.changed())} of {len(trace.passes)} passes" in out
    assert "OutlineDispatchRegionsPass on builtin.module" in out
    shown = trace.first_output_containing("flow.dispatch", introduced=True).index
    assert cli_main(["passes", str(ws.root), "flow", "--show", str(shown)]) == 0
    assert "+  flow.executable private @SingleConv$async_dispatch_0 {" in capsys.readouterr().out


@pytest.mark.slow
def test_resnet50_global_optimization_pass_list():
    from tests.zoo_cache import zoo_workspace

    ws = zoo_workspace("resnet50")  # compiled once per run for every zoo test; the trace goes to passes/
    trace = PassTraceJob(ws, "global-optimization").run()
    by_hand = dumps_by_hand(ws.snapshot_path("preprocessing"), "preprocessing", "global-optimization", keep=0)
    assert len(trace.passes) == len(by_hand) > 100
    assert sorted(p.name for p in trace.passes) == sorted(name for name, _ in by_hand)
    changed = trace.changed()
    assert 0 < len(changed) < len(trace.passes)
    assert trace.diff(changed[0]).changed
