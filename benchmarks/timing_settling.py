"""How kernel timings settle, and how often two timings of the same kernel are called different.

On the example (resources/examples/single_conv.onnx, llvm-cpu): the conv executable's
unedited source is substituted, so plain and substituted run the same code; the
kernel is then timed TRIALS times with core/run/kernel_timing.py's rule (batches of
5, alternating, until IQR / median <= 10% with at least 10 repetitions, at most 40 or
30 s). Each trial reports its repetitions, spreads, wall and CPU seconds and whether
the rule called a difference (for identical code it should not). The same kernel with
the operands of its `arith.mulf` swapped is timed once more (IREE then builds slower
code for it). Results go into docs/PERFORMANCE.md.

    .venv/bin/python benchmarks/timing_settling.py [--trials 5]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.perf_doc import timed, write_section  # noqa: E402
from npu_studio.core.executables import substitution as subs  # noqa: E402
from npu_studio.core.executables.catalog import list_executables  # noqa: E402
from npu_studio.core.run.kernel_timing import time_substitution  # noqa: E402
from npu_studio.core.workspace import substitutions as sub_records  # noqa: E402
from npu_studio.core.workspace.workspace import compile_model  # noqa: E402

EXAMPLE = Path(__file__).resolve().parents[1] / "resources" / "examples" / "single_conv.onnx"


def row(label: str, k, wall: float, cpu: float) -> str:
    p, s = k.plain, k.substituted
    return (f"| {label} | {len(p.samples_ms)} / {len(s.samples_ms)} | {p.median_ms:.2f} / {s.median_ms:.2f} "
            f"| {100 * p.spread:.0f}% / {100 * s.spread:.0f}% | {p.stopped} / {s.stopped} | {k.ratio:.2f} "
            f"| {k.kernel_difference} | {wall:.1f} | {cpu:.1f} |")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trials", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        ws = compile_model(EXAMPLE, Path(tmp) / "ws")
        [info] = list_executables(ws)
        source = info.source.read_text()
        subs.substitute(ws, info.name, sub_records.SOURCE, source).run()
        plain = subs.plain_build(ws)
        rows, called = [], 0
        for i in range(args.trials):
            k, wall, cpu = timed(lambda: time_substitution(ws, info.name, plain, whole_model=False))
            called += k.kernel_difference.measurable
            rows.append(row(f"same code, trial {i + 1}", k, wall, cpu))
            print(rows[-1], flush=True)
        swapped = source.replace("arith.mulf %in, %in_1", "arith.mulf %in_1, %in")
        assert swapped != source
        subs.substitute(ws, info.name, sub_records.SOURCE, swapped).run()
        k, wall, cpu = timed(lambda: time_substitution(ws, info.name, plain, whole_model=False))
        rows.append(row("`mulf` operands swapped", k, wall, cpu))
        print(rows[-1], flush=True)
    load = os.getloadavg()[0]
    body = f"""## Kernel timing: repeat until settled (issue 24)

`benchmarks/timing_settling.py` on the example's conv executable, llvm-cpu, one run; load average
{load:.0f} at the end. Each cell is plain / substituted; spread = interquartile range / median;
a difference is called only when both timings have at least 10 repetitions and the middle halves
of their runs do not overlap.

| timing | repetitions | median ms | spread | stopped | ratio | verdict | wall s | CPU s |
|---|---|---|---|---|---|---|---|---|
{chr(10).join(rows)}

Identical code called different in {called} of {args.trials} trials.
"""
    print(body)
    write_section("timing-settling", body)


if __name__ == "__main__":
    main()
