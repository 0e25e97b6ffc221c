"""Cold start to a window: the one-folder bundle's launcher against `make run`'s
`.venv/bin/python -m npu_studio`, and the bundle's size and build time.

    python benchmarks/app_start.py [--build] [--runs 5]

`--build` runs `make bundle` first and times it (PyInstaller, then the bundle's
own --self-test). Each start is a new process launched with --self-test, timed
from the launch to its "window shown" line (compile not counted), then ended
with its whole process group. Offscreen, starts alternate, medians.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from perf_doc import write_section  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
BUNDLE = ROOT / "dist" / "npu-studio"
MARKER = "self-test: window shown"


def time_to_window(cmd: list[str], home: Path) -> float:
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", HOME=str(home), XDG_CONFIG_HOME=str(home / "config"))
    env.pop("PYTHONPATH", None)
    t0 = time.perf_counter()
    proc = subprocess.Popen([*cmd, "--self-test"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True, env=env, cwd=home, start_new_session=True)
    try:
        for line in proc.stdout:
            if line.startswith(MARKER):
                return time.perf_counter() - t0
        raise RuntimeError(f"{cmd[0]} exited ({proc.wait()}) before showing its window")
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the window and any iree-compile it started
        proc.wait()


def folder_bytes(folder: Path) -> tuple[int, int]:
    """(bytes, files), symlinks not followed."""
    total = files = 0
    for dirpath, _, names in os.walk(folder):
        for name in names:
            st = os.lstat(os.path.join(dirpath, name))
            total += st.st_size
            files += 1
    return total, files


def biggest(folder: Path, n: int = 4) -> list[tuple[int, str]]:
    sizes = [(p.lstat().st_size, str(p.relative_to(folder))) for p in folder.rglob("*")
             if p.is_file() and not p.is_symlink()]
    return sorted(sizes, reverse=True)[:n]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", action="store_true", help="run `make bundle` first and time it")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    build_s = None
    if args.build:
        t0 = time.perf_counter()
        subprocess.run(["make", "-C", str(ROOT), "bundle"], check=True)
        build_s = time.perf_counter() - t0
    launcher = BUNDLE / "npu-studio"
    if not launcher.exists():
        print(f"{launcher}: no bundle; run `make bundle` (or this script with --build)", file=sys.stderr)
        return 2
    venv_cmd = [sys.executable, "-m", "npu_studio"]
    bundle_cmd = [str(launcher)]
    times: dict[str, list[float]] = {"venv": [], "bundle": []}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.runs):
            times["venv"].append(time_to_window(venv_cmd, Path(tmp)))
            times["bundle"].append(time_to_window(bundle_cmd, Path(tmp)))
    size, files = folder_bytes(BUNDLE)
    venv_med, bundle_med = statistics.median(times["venv"]), statistics.median(times["bundle"])
    lines = [
        "## Desktop launch: bundle and cold start (issue 15)",
        "",
        f"`benchmarks/app_start.py{' --build' if build_s else ''}`: launch to the first shown window, "
        f"offscreen, {args.runs} alternating starts each, medians (compile not counted).",
        "",
        "| | seconds to a window |",
        "|---|---|",
        f"| `make run` (`.venv/bin/python -m npu_studio`) | {venv_med:.2f} |",
        f"| bundle `dist/npu-studio/npu-studio` | {bundle_med:.2f} |",
        f"| **ratio** bundle / make run | **{bundle_med / venv_med:.2f}** |",
        "",
        f"- bundle (PyInstaller one-folder, `make bundle`): {size / 2**20:.0f} MiB in {files} files; largest: "
        + ", ".join(f"{name} {b / 2**20:.0f} MiB" for b, name in biggest(BUNDLE)),
    ]
    if build_s is not None:
        lines.append(f"- `make bundle` wall time: {build_s:.0f} s (PyInstaller, then the bundle's --self-test)")
    lines.append(f"- all starts (s): make run {', '.join(f'{t:.2f}' for t in times['venv'])}; "
                 f"bundle {', '.join(f'{t:.2f}' for t in times['bundle'])}")
    body = "\n".join(lines)
    print(body)
    write_section("app-start-bench", body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
