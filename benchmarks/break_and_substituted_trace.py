"""Model debugging, round 2 (issue 28): `trace` with a substitution fitted to the dispatch module; `trace --break`.

Usage: .venv/bin/python benchmarks/break_and_substituted_trace.py [--no-update]
Compiles light resnet50 into a temporary workspace (timed: the baseline a
break build compares with). Then `trace` builds the plain dispatch module;
one executable is substituted with its own text, unedited, and `trace`
builds the dispatch module again with the substitution fitted to it (the
difference is the fitting: a compile up to executable-sources plus the
rewrite); both runs must agree with onnxruntime. Then `trace --break N`
before the substitution: first (builds the variant) and again (reused).
CPU seconds include child processes.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from perf_doc import timed, write_section

from npu_studio.core.debug.dispatch_break import break_after
from npu_studio.core.debug.numerics_trace import trace
from npu_studio.core.executables import substitution as subs
from npu_studio.core.executables.catalog import list_executables
from npu_studio.core.run.runner import pick_function, random_inputs
from npu_studio.core.workspace import substitutions as sub_records
from npu_studio.core.workspace.workspace import compile_model
from tests.conftest import light_zoo_dir

BREAK_AT = 10


def main() -> int:
    import os

    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        ws, compile_w, compile_c = timed(lambda: compile_model(light_zoo_dir() / "light_resnet50.onnx",
                                                               Path(tmp) / "resnet50"))
        x = random_inputs(pick_function(ws.snapshot_path("input")), 0)
        plain, plain_w, plain_c = timed(lambda: trace(ws, x))
        brk, break_w, break_c = timed(lambda: break_after(ws, BREAK_AT, x))
        _, again_w, again_c = timed(lambda: break_after(ws, BREAK_AT, x))
        info = next(e for e in list_executables(ws) if e.dispatches and e.source is not None)
        subs.substitute(ws, info.name, sub_records.SOURCE, info.source.read_text()).run()
        fitted, fitted_w, fitted_c = timed(lambda: trace(ws, x))
        _, cached_w, cached_c = timed(lambda: trace(ws, x))
    load = f"load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after"
    lines = [
        "## Model debugging, round 2: substituted trace and IREE's own break (issue 28)",
        "",
        ("`benchmarks/break_and_substituted_trace.py`, light resnet50 (58 dispatches), seeded inputs, one run on "
         f"a 2-core machine ({load}); CPU seconds include child processes."),
        "",
        "| measure | wall | CPU | CPU / full compile |",
        "|---|---:|---:|---:|",
        f"| full compile of the workspace (baseline) | {compile_w:.2f} s | {compile_c:.2f} s | 1.00 |",
        (f"| `trace`, first, plain dispatch module (its build {plain.build_seconds:.2f} s) | {plain_w:.2f} s "
         f"| {plain_c:.2f} s | {plain_c / compile_c:.2f} |"),
        (f"| `trace`, first, with `{info.name}` substituted (dispatch module with the fitted substitution: "
         f"{fitted.build_seconds:.2f} s) | {fitted_w:.2f} s | {fitted_c:.2f} s | {fitted_c / compile_c:.2f} |"),
        f"| `trace`, the same, dispatch module cached | {cached_w:.2f} s | {cached_c:.2f} s | {cached_c / compile_c:.2f} |",
        (f"| `trace --break {BREAK_AT}`, first (builds variant `break-{BREAK_AT}`: {brk.seconds['build']:.2f} s) "
         f"| {break_w:.2f} s | {break_c:.2f} s | {break_c / compile_c:.2f} |"),
        f"| `trace --break {BREAK_AT}`, variant reused | {again_w:.2f} s | {again_c:.2f} s | {again_c / compile_c:.2f} |",
        "",
        (f"Without substitution: paired {plain.paired} of {len(plain.dispatches)}, "
         f"{'none departs' if plain.first_divergent is None else 'one departs'}. With the unedited substitution, "
         f"fitted: paired {fitted.paired}, {'none departs' if fitted.first_divergent is None else 'one departs'}; "
         f"{'; '.join(n for n in fitted.notes if info.name in n and 'fitted' in n)}. The break's output "
         f"(dispatch #{BREAK_AT}, {'x'.join(map(str, brk.dispatch.shape))}) against ONNX tensor "
         f"{brk.dispatch.onnx_tensor!r}: relative error {brk.dispatch.max_rel_error:.2g}, "
         f"{'departs' if brk.dispatch.departs else 'agrees'}."),
    ]
    section = "\n".join(lines)
    print(section)
    if "--no-update" not in sys.argv:
        write_section("model-debugging-round2-bench", section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
