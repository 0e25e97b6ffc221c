"""Run SCALE-Sim (v3) on reference layers and record its cycle counts.

The output, tests/core/npu/sim/scalesim_golden.json, is the independent
truth our MAC cost model (npu_studio/core/npu/sim/cost.py) is checked
against. SCALE-Sim is slow (minutes for the example conv), so it runs
here once, not in `make test`; regenerate with

    python benchmarks/scalesim_golden.py [--only NAME ...]

SCALE-Sim quirks: numpy < 2.4; every topology row ends with a comma; no
padding field, so a padded conv is given its padded input size. SRAMs
and DRAM bandwidth are made large enough that SCALE-Sim reports no
stalls: its total cycles are then pure compute cycles (fill, folds,
drain), the quantity our cost model computes.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "core" / "npu" / "sim" / "scalesim_golden.json"

# name: (kind, params). conv: padded IH, IW, KH, KW, C, F, stride; gemm: M, N, K.
LAYERS = {
    # resources/examples/single_conv.onnx: 1x3x500x500, 8 filters 3x3, no padding.
    "example_conv": ("conv", (500, 500, 3, 3, 3, 8, 1)),
    # 3x3 64->64 at 56x56 with padding 1: SCALE-Sim gets the padded 58x58 input.
    "conv3x3_64_56": ("conv", (58, 58, 3, 3, 64, 64, 1)),
    "conv1x1_256_1024_14": ("conv", (14, 14, 1, 1, 256, 1024, 1)),
    "matmul_128x128x64": ("gemm", (128, 128, 64)),
    # Small layers for the live test (seconds, not minutes).
    "small_conv": ("conv", (10, 10, 3, 3, 4, 6, 1)),
    "small_gemm": ("gemm", (20, 12, 9)),
}
ARRAYS = {"large": (32, 32), "small": (8, 8)}
# Which array each layer is simulated on (the example conv on 32x32 like the anchor).
LAYER_ARRAY = {name: "large" for name in LAYERS} | {"small_conv": "small", "small_gemm": "small"}
DATAFLOWS = {"os": "output-stationary", "ws": "weight-stationary"}

CONFIG = """[general]
run_name = golden

[architecture_presets]
ArrayHeight:    {rows}
ArrayWidth:     {cols}
IfmapSramSzkB:   1048576
FilterSramSzkB:  1048576
OfmapSramSzkB:   1048576
IfmapOffset:    0
FilterOffset:   100000000
OfmapOffset:    200000000
Bandwidth : 100000
Dataflow : {df}
MemoryBanks:   1
ReadRequestBuffer: 1024
WriteRequestBuffer: 1024

[layout]
IfmapCustomLayout: False
IfmapSRAMBankBandwidth: 10000
IfmapSRAMBankNum: 1
IfmapSRAMBankPort: 2
FilterCustomLayout: False
FilterSRAMBankBandwidth: 10000
FilterSRAMBankNum: 1
FilterSRAMBankPort: 2

[sparsity]
SparsitySupport : false
SparseRep : ellpack_block
OptimizedMapping : false
BlockSize : 8
RandomNumberGeneratorSeed : 40

[run_presets]
InterfaceBandwidth: USER
UseRamulatorTrace: False
"""


def topology_rows(name: str, kind: str, params: tuple) -> tuple[str, str]:
    """(topology csv, layout csv); every row ends with a comma (SCALE-Sim drops the last field)."""
    if kind == "gemm":
        m, n, k = params
        return f"Layer, M, N, K,\n{name}, {m}, {n}, {k},\n", _layout(name)
    ih, iw, kh, kw, c, f, s = params
    topo = ("Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, "
            f"Num Filter, Strides,\n{name}, {ih}, {iw}, {kh}, {kw}, {c}, {f}, {s},\n")
    return topo, _layout(name)


def _layout(name: str) -> str:
    # One identity layout row; unused with custom layouts off, but SCALE-Sim parses the file.
    return "Layer name," + ",".join(f"x{i}" for i in range(20)) + ",\n" + \
        name + "," + ",".join(["1"] * 6 + ["0"] * 14) + ",\n"


def run_layer(name: str, df: str) -> dict:
    from scalesim.scale_sim import scalesim

    kind, params = LAYERS[name]
    rows, cols = ARRAYS[LAYER_ARRAY[name]]
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        (t / "scale.cfg").write_text(CONFIG.format(rows=rows, cols=cols, df=df))
        topo, layout = topology_rows(name, kind, params)
        (t / "topo.csv").write_text(topo)
        (t / "layout.csv").write_text(layout)
        start = time.perf_counter()
        sim = scalesim(save_disk_space=True, verbose=False, config=str(t / "scale.cfg"),
                       topology=str(t / "topo.csv"), layout=str(t / "layout.csv"),
                       input_type_gemm=(kind == "gemm"))
        sim.run_scale(top_path=str(t / "out"))
        wall = time.perf_counter() - start
        report = next((t / "out").rglob("COMPUTE_REPORT.csv"))
        with report.open() as f:
            row = {k.strip(): v.strip() for k, v in next(csv.DictReader(f)).items() if k}
    return {
        "layer": name, "kind": kind, "params": list(params), "array": [rows, cols],
        "dataflow": DATAFLOWS[df], "total_cycles": int(float(row["Total Cycles"])),
        "stall_cycles": int(float(row["Stall Cycles"])),
        "compute_util_percent": float(row["Compute Util %"]), "wall_seconds": round(wall, 3),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", default=None, help="layer names (default all)")
    ap.add_argument("--dataflow", choices=sorted(DATAFLOWS), nargs="*", default=sorted(DATAFLOWS))
    ap.add_argument("--out", type=Path, default=GOLDEN)
    args = ap.parse_args(argv)
    data = json.loads(args.out.read_text()) if args.out.exists() else {"results": []}
    for name in args.only or list(LAYERS):
        for df in args.dataflow:
            res = run_layer(name, df)
            print(json.dumps(res), flush=True)
            data["results"] = [r for r in data["results"]
                               if (r["layer"], r["dataflow"]) != (name, res["dataflow"])] + [res]
            data["results"].sort(key=lambda r: (list(LAYERS).index(r["layer"]), r["dataflow"]))
            data["generator"] = "benchmarks/scalesim_golden.py with scalesim " + _version()
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps(data, indent=1) + "\n")
    return 0


def _version() -> str:
    from importlib.metadata import version

    return version("scalesim")


if __name__ == "__main__":
    sys.exit(main())
