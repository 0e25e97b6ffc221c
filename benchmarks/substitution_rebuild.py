"""Substitute-and-rebuild of one executable vs a full compile, and kernel timing repeatability.

On light resnet50 (imported once): a full compile of the workspace (all
phase snapshots and executable dumps) alternates with substituting one conv
executable's unedited source, which rebuilds from the stream snapshot
(core/executables/substitution.py REBUILD_FROM). Also measured: what the three
executable dumps add to a compile (the same iree-compile command with and
without them), and how the kernel and whole-model timings settle
(core/run/kernel_timing.py). Results go into docs/PERFORMANCE.md.

    .venv/bin/python benchmarks/substitution_rebuild.py [--runs 3] [--repetitions 10]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.perf_doc import write_section  # noqa: E402
from npu_studio.core.compile.compiler import build_command  # noqa: E402
from npu_studio.core.executables import substitution as subs  # noqa: E402
from npu_studio.core.executables.catalog import list_executables  # noqa: E402
from npu_studio.core.run.kernel_timing import time_substitution  # noqa: E402
from npu_studio.core.run.numeric_gate import gate_substitution  # noqa: E402
from npu_studio.core.run.runner import pick_function, random_inputs  # noqa: E402
from npu_studio.core.workspace import substitutions as sub_records
from npu_studio.core.workspace.workspace import Workspace  # noqa: E402


def resnet50() -> Path:
    import onnx

    return Path(onnx.__file__).parent / "backend/test/data/light/light_resnet50.onnx"


CPU: list[float] = []  # CPU seconds (ours and our children's) of each timed call, in order


def timed(fn) -> float:
    """Wall seconds of fn(); its CPU seconds go to CPU (less sensitive to other load on the machine)."""
    r0, c0 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    fn()
    wall = time.perf_counter() - t0
    r1, c1 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU.append(sum(b.ru_utime + b.ru_stime - a.ru_utime - a.ru_stime for a, b in ((r0, r1), (c0, c1))))
    return wall


def iree_compile(ws: Workspace, work: Path, dumps: bool) -> float:
    out = work / ("dumps" if dumps else "nodumps")
    out.mkdir(exist_ok=True)
    cmd = build_command(ws.imported_path, out / "phases", out / "module.vmfb",
                        executables_dir=out / "executables" if dumps else None)
    return timed(lambda: subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--repetitions", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        ws = Workspace.create(resnet50(), work / "ws")
        full, rebuild, with_dumps, without_dumps = [], [], [], []
        cpu = {"full": [], "rebuild": [], "with": [], "without": []}
        name = None
        for _ in range(args.runs):
            ws.manifest.substitutions = []  # the full compile is a plain one
            ws.save()
            full.append(timed(ws.compile))
            cpu["full"].append(CPU[-1])
            if name is None:
                name = next(i.name for i in list_executables(ws) if i.ops.startswith("conv") and i.benchmark)
            source = next(i.source for i in list_executables(ws) if i.name == name).read_text()
            rebuild.append(timed(lambda: subs.substitute(ws, name, sub_records.SOURCE, source).run()))
            cpu["rebuild"].append(CPU[-1])
            with_dumps.append(iree_compile(ws, work, True))
            cpu["with"].append(CPU[-1])
            without_dumps.append(iree_compile(ws, work, False))
            cpu["without"].append(CPU[-1])
            print(f"full {full[-1]:.2f} s, rebuild {rebuild[-1]:.2f} s, iree-compile with dumps "
                  f"{with_dumps[-1]:.2f} s, without {without_dumps[-1]:.2f} s", flush=True)
        plain = subs.plain_build(ws)
        gate = gate_substitution(ws, name, sub_records.SOURCE, plain_folder=plain)
        sig = pick_function(ws.snapshot_path("input"))
        timing = time_substitution(ws, name, plain, inputs=random_inputs(sig), function=sig.name,
                                   repetitions=args.repetitions)

    load = os.getloadavg()[0]
    med = statistics.median
    ratio = med(rebuild) / med(full)
    dump_ratio = med(with_dumps) / med(without_dumps)
    cpu_ratio = med(cpu["rebuild"]) / med(cpu["full"])
    cpu_dump_ratio = med(cpu["with"]) / med(cpu["without"])

    def row(label, t):
        q1, q3 = t.quartiles_ms
        return (f"| {label} | {len(t.samples_ms)} | {t.median_ms:.2f} | {q1:.2f} | {q3:.2f} "
                f"| {100 * t.spread:.0f}% | {t.stopped} |")

    body = f"""## Executable substitution: rebuild vs full compile, kernel timing (issue 13)

`benchmarks/substitution_rebuild.py` on light resnet50, llvm-cpu, {args.runs} alternating runs; medians.

| | wall seconds | CPU seconds |
|---|---|---|
| full compile of the workspace (12 snapshots, executable dumps) | {med(full):.2f} | {med(cpu["full"]):.2f} |
| substitute one conv executable (`{name}`, unedited) and rebuild from `stream` | {med(rebuild):.2f} | {med(cpu["rebuild"]):.2f} |
| **rebuild / full** | **{ratio:.2f}** | **{cpu_ratio:.2f}** |
| `iree-compile` with the three executable dumps | {med(with_dumps):.2f} | {med(cpu["with"]):.2f} |
| the same command without them | {med(without_dumps):.2f} | {med(cpu["without"]):.2f} |
| **with dumps / without** | **{dump_ratio:.2f}** | **{cpu_dump_ratio:.2f}** |

CPU seconds count iree-compile and our process; they depend much less than wall time on
what else the machine runs.

The rebuild starts from the `stream` snapshot, the latest phase whose
compile still applies a source substitution (IREE swaps sources in at the
end of `executable-sources`; `executable-sources` for a configuration);
`tests/core/test_substitution.py` checks both sides of that boundary. The
unedited substitution gave {"bit-identical" if gate.bit_identical else "DIFFERENT"} outputs.

Timing repeatability, at least {args.repetitions} repetitions each, more until the spread
(interquartile range / median) is at most 10% (at most 40 repetitions or 30 s):

| measurement | repetitions | median ms | q1 ms | q3 ms | spread | stopped |
|---|---|---|---|---|---|---|
{row("kernel, plain build", timing.plain)}
{row("kernel, substituted build", timing.substituted)}
{row("whole model, plain build", timing.model_plain)}
{row("whole model, substituted build", timing.model_substituted)}

Identical kernel, substituted / plain: {timing.kernel_difference} (ratio {timing.ratio:.2f});
whole model: {timing.model_difference} (ratio {timing.model_ratio:.2f}). The load average was
{load:.0f} at the end of this run, which is what the spreads show.
"""
    print(body)
    write_section("substitution-rebuild", body)


if __name__ == "__main__":
    main()
