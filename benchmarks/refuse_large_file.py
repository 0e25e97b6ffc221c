"""How long `npu-studio compile` takes to refuse a 3 GiB file that is not ONNX, and its peak memory.

Whole processes (`python -m npu_studio compile FILE --workspace DIR`), each file three times, the
median wall time and the largest peak RSS. The files are sparse (no disk used): zeros, and 4 KiB of
noise followed by zeros. Aim: under 5 s, memory far below the file's size. Also prints `make fuzz`'s
case counts when given the log of a `make fuzz` run (--fuzz-log FILE).

    .venv/bin/python benchmarks/refuse_large_file.py [--fuzz-log fuzz.log]
"""

from __future__ import annotations

import argparse
import os
import random
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.perf_doc import write_section  # noqa: E402

SIZE = 3 << 30


def make_files(folder: Path) -> dict[str, Path]:
    zeros, noise = folder / "zeros.onnx", folder / "noise.onnx"
    with open(zeros, "wb") as f:
        f.truncate(SIZE)
    with open(noise, "wb") as f:
        f.write(random.Random(0).randbytes(4096))
        f.truncate(SIZE)
    return {"3 GiB of zeros": zeros, "4 KiB of noise, then zeros to 3 GiB": noise}


def refuse(path: Path, folder: Path) -> tuple[float, int, str]:
    """(wall seconds, peak RSS in KiB, the error line) of one whole-process compile of `path`."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "npu_studio", "compile", str(path), "--workspace",
                           str(folder / "ws")], capture_output=True, text=True, env=env, timeout=600)
    seconds = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    assert proc.returncode == 2 and not (folder / "ws").exists(), proc.stderr
    return seconds, max(peak, before), proc.stderr.strip()


def fuzz_counts(log: Path) -> list[tuple[str, str]]:
    """(test, "N passing, M failing, K invalid") per property test of a --hypothesis-show-statistics log."""
    rows, test = [], None
    for line in log.read_text().splitlines():
        m = re.search(r"(test_\w+)(?:\[.*\])?:\s*$", line)
        if m:
            test = m.group(1)
        m = re.search(r"- (\d+) passing, (\d+) failing, and (\d+) invalid", line)
        if m and test:
            rows.append((test, f"{m.group(1)} passing, {m.group(2)} failing, {m.group(3)} invalid (filtered)"))
            test = None
    return rows


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--fuzz-log", type=Path)
    args = parser.parse_args()
    lines = ["## Hostile files: refusing a 3 GiB non-ONNX file, reader fuzzing (issue 25)", "",
             "`benchmarks/refuse_large_file.py`: whole-process `npu-studio compile FILE --workspace DIR` on "
             "sparse 3 GiB files named `.onnx`, median of "
             f"{args.runs} runs; peak RSS is the largest of the runs. The ONNX wire reader refuses the file "
             "from its first records (field 0, an unknown ModelProto field, a repeated singular field, an "
             "overlong varint), before any workspace folder exists. Most of the time is the interpreter "
             "starting and importing the CLI; the scan itself stops within the first bytes. Load average "
             f"at the start of this run: {os.getloadavg()[0]:.1f} on 2 cores (other jobs shared the machine).", "",
             "| file | median wall | peak RSS | error |", "|---|---|---|---|"]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for label, path in make_files(folder).items():
            results = [refuse(path, folder) for _ in range(args.runs)]
            wall = statistics.median(r[0] for r in results)
            peak_mib = max(r[1] for r in results) / 1024
            message = results[0][2].replace(str(path), path.name)
            print(f"{label}: {wall:.2f} s, peak {peak_mib:.0f} MiB: {message}")
            lines.append(f"| {label} | {wall:.2f} s | {peak_mib:.0f} MiB | `{message}` |")
    if args.fuzz_log:
        lines += ["", "`make fuzz` (the `fuzz` Hypothesis profile of tests/core/test_reader_properties.py, up to "
                  "3,000 examples a reader), cases run in one run:", "", "| reader test | examples |", "|---|---|"]
        lines += [f"| `{test}` | {counts} |" for test, counts in fuzz_counts(args.fuzz_log)]
    write_section("refuse-large-file", "\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
