"""Loading a 100,000-task NPU program (model.npu.json) against the reader before issue 25's checks.

The program is benchmarks/npu_sim.py's chain of tiled matmuls from the real scheduler. "Before" is
the reader as it was: `json.loads` and each record's `from_dict`, no type or bound checks.
"Now" is `NpuProgram.load`: UTF-8, bounded integers, no NaN, every field typed and ranged.
Alternating runs, best of each, CPU seconds of this process (and wall); writes its section of
docs/PERFORMANCE.md.

    .venv/bin/python benchmarks/npu_program_load.py [--runs 3]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "core" / "npu" / "sim"))

from benchmarks.perf_doc import timed, write_section  # noqa: E402
from sim_synth import matmul_chain  # noqa: E402

from npu_studio.core.npu.program.npu_ir import Buffer, DispatchInfo, NpuProgram, Task  # noqa: E402
from npu_studio.core.npu.target.target import NpuTarget, load_target  # noqa: E402


def unchecked_load(path: Path) -> NpuProgram:
    """The reader before the checks: trusts the file's types and sizes."""
    d = json.loads(path.read_text(encoding="utf-8"))
    return NpuProgram(
        target=NpuTarget.from_dict(d["target"]),
        dispatches=tuple(DispatchInfo.from_dict(x) for x in d["dispatches"]),
        buffers=tuple(Buffer.from_dict(x) for x in d["buffers"]),
        tasks=tuple(Task.from_dict(x) for x in d["tasks"]),
        sram_peak=d["sram_peak"], dram_peak=d["dram_peak"], version=d["version"],
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    program = matmul_chain(100_000, load_target())
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "model.npu.json"
        program.save_json(path)
        size = path.stat().st_size
        load_with_gc = NpuProgram.__dict__["load"].__func__.__wrapped__  # without the collector's pause
        readers = {"before": lambda: unchecked_load(path), "now": lambda: NpuProgram.load(path),
                   "now, collector on": lambda: load_with_gc(NpuProgram, path)}
        times: dict[str, list[tuple[float, float]]] = {name: [] for name in readers}
        for _ in range(args.runs):
            for name, read in readers.items():
                gc.collect()
                loaded, wall, cpu = timed(read)
                assert loaded == program
                del loaded
                times[name].append((wall, cpu))
    bw, nw = min(t[0] for t in times["before"]), min(t[0] for t in times["now"])
    bc, nc = min(t[1] for t in times["before"]), min(t[1] for t in times["now"])
    gw, gc_cpu = min(t[0] for t in times["now, collector on"]), min(t[1] for t in times["now, collector on"])
    print(f"collector on: {gc_cpu:.2f} s CPU; before {bc:.2f} s CPU ({bw:.2f} wall); now {nc:.2f} s CPU ({nw:.2f} wall); ratio CPU {nc / bc:.2f}")
    write_section("npu-program-load-bench", f"""## Loading a 100,000-task NPU program (issue 25)

`benchmarks/npu_program_load.py`: `NpuProgram.load` of a {len(program.tasks):,}-task program
({sum(len(t.steps) for t in program.tasks):,} steps, {size / 2**20:.0f} MiB of JSON; the matmul chain of
`benchmarks/npu_sim.py`), against the reader before issue 25 (`json.loads` and each record's `from_dict`,
nothing checked). {args.runs} alternating runs, best of each; load average {load:.1f} on 2 cores at the start.

| reader | CPU s | wall s |
|---|---:|---:|
| before issue 25 (no checks) | {bc:.2f} | {bw:.2f} |
| now (UTF-8, bounded integers, no NaN, every field typed and ranged) | {nc:.2f} | {nw:.2f} |
| **ratio** now / before | **{nc / bc:.2f}** | {nw / bw:.2f} |
| now with the collector running (the checks alone, for comparison) | {gc_cpu:.2f} | {gw:.2f} |
| ratio of that to before | {gc_cpu / bc:.2f} | {gw / bw:.2f} |

The first checked reader (round one of issue 25) cost about 1.5 times the unchecked one in CPU (1.8
in wall time on the loaded machine): a Python call per integer (1.6 million) to bound it, and a
checker call per field of every record. Now one scan of the bytes (digits translated to 9s, then a
search for sixteen 9s) proves no integer can be out of range (otherwise the per-integer hook runs,
as before), each record is checked and
built by one function generated from its dataclass's field types (lists of integers checked in bulk
through a set of their types and their minimum and maximum), and anything that function does not
take goes through the field-by-field check for its message. The cycle collector is paused during the
load, as for the NPU MLIR reader: millions of new acyclic containers would only make it rescan.
""")


if __name__ == "__main__":
    main()
