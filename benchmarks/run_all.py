"""Run every benchmark in turn; each writes its own section of docs/PERFORMANCE.md.

    make bench   (or .venv/bin/python benchmarks/run_all.py)
"""

import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
BENCHMARKS = ("compile_overhead.py", "index_time.py", "ir_view_scroll.py", "params_big_models.py",
              "functional_sim.py", "substitution_rebuild.py", "edit_resume.py",
              "npu_mlir_read.py", "schedule_chart.py", "npu_sim.py", "tile_search.py", "quantized.py",
              "model_debugging.py", "npu_hal.py", "timing_settling.py",
              "sweep.py")  # app_start.py needs `make bundle` first


def main() -> int:
    env = dict(os.environ, QT_QPA_PLATFORM=os.environ.get("QT_QPA_PLATFORM", "offscreen"))
    failed = [name for name in BENCHMARKS
              if subprocess.run([sys.executable, str(HERE / name)], env=env).returncode != 0]
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
