"""Cold start to a window: `make run`'s `.venv/bin/python -m npu_studio` against a bare PySide6
window (QApplication + an empty QMainWindow) in the same run, the one-folder bundle's launcher when
it is built, and the bundle's size and build time.

    python benchmarks/app_start.py [--build] [--runs 5]

Starts run with compiled bytecode, as an installed copy has it (pip compiles on install, the
bundle holds it): an environment with PYTHONDONTWRITEBYTECODE would otherwise compile every
module of ours on every start. The bytecode goes to a temporary PYTHONPYCACHEPREFIX, filled by one
untimed start of each command.

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


BARE_PYSIDE = f"""
import time
from PySide6 import QtCore, QtWidgets
app = QtWidgets.QApplication([])
window = QtWidgets.QMainWindow()
window.resize(1200, 800)
window.show()
QtCore.QTimer.singleShot(0, lambda: print(f"{MARKER} (process CPU {{time.process_time():.2f}} s)", flush=True))
app.exec()
"""


def time_to_window(cmd: list[str], home: Path, code: Path = ROOT) -> tuple[float, float]:
    """(wall seconds from launch to the shown window, the process's CPU seconds by then), running
    `code`'s npu_studio (this checkout's by default)"""
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", HOME=str(home), XDG_CONFIG_HOME=str(home / "config"),
               PYTHONPYCACHEPREFIX=str(home / "pycache"), PYTHONPATH=str(code))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True, env=env, cwd=home, start_new_session=True)
    try:
        for line in proc.stdout:
            if line.startswith(MARKER):
                return time.perf_counter() - t0, float(line.split("CPU ")[1].split(" s")[0])
        raise RuntimeError(f"{cmd[0]} exited ({proc.wait()}) before showing its window")
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the window and any iree-compile it started
        proc.wait()


HEAVY = ("pyqtgraph", "iree.compiler", "numpy", "onnx", "PySide6.QtCore", "PySide6.QtGui", "PySide6.QtWidgets")
BUILD_SECONDS = ROOT / "build" / "bundle-build-seconds.txt"  # written by the last --build run


def import_shares() -> tuple[float, dict[str, float]]:
    """Seconds to import the window's module, and the share of it each heavy package takes
    (the first import of each, wherever it comes from; from `python -X importtime`)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    subprocess.run([sys.executable, "-c", "import npu_studio.ui.main_window"], env=env, check=True)  # bytecode
    err = subprocess.run([sys.executable, "-X", "importtime", "-c", "import npu_studio.ui.main_window"],
                         capture_output=True, text=True, env=env, check=True).stderr
    cumulative = {}
    for line in err.splitlines():
        if line.startswith("import time:") and "|" in line and "cumulative" not in line:
            _, cum, name = line.split("|")
            cumulative.setdefault(name.strip(), int(cum) / 1e6)
    total = cumulative["npu_studio.ui.main_window"]
    return total, {name: cumulative[name] / total for name in HEAVY if name in cumulative}


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
    parser.add_argument("--baseline", type=Path, default=None,
                        help="another checkout whose `python -m npu_studio` starts alternate with this one's")
    args = parser.parse_args()
    build_s, cache = None, ""
    if args.build:
        cache = "incremental: PyInstaller's cache in build/ was there" if (ROOT / "build" / "pyinstaller").exists() \
            else "clean: no PyInstaller cache"
        t0 = time.perf_counter()
        subprocess.run(["make", "-C", str(ROOT), "bundle"], check=True)
        build_s = time.perf_counter() - t0
        BUILD_SECONDS.write_text(f"{build_s:.0f} {cache}\n")
    elif BUILD_SECONDS.exists():
        build_s, cache = BUILD_SECONDS.read_text().strip().split(" ", 1)
    launcher = BUNDLE / "npu-studio"
    commands = {"bare": [sys.executable, "-c", BARE_PYSIDE],
                "venv": [sys.executable, "-m", "npu_studio", "--self-test"]}
    code = {name: ROOT for name in ("bare", "venv", "bundle")}
    if args.baseline is not None:
        commands["baseline"] = commands["venv"]
        code["baseline"] = args.baseline
    if launcher.exists():
        commands["bundle"] = [str(launcher), "--self-test"]
    times: dict[str, list[float]] = {name: [] for name in commands}
    cpu: dict[str, list[float]] = {name: [] for name in commands}
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        for name, cmd in commands.items():
            time_to_window(cmd, Path(tmp), code[name])  # fills the bytecode cache
        for _ in range(args.runs):
            for name, cmd in commands.items():
                wall, used = time_to_window(cmd, Path(tmp), code[name])
                times[name].append(wall)
                cpu[name].append(used)
    load = max(load, os.getloadavg()[0])
    med = {name: statistics.median(t) for name, t in times.items()}
    med_cpu = {name: statistics.median(t) for name, t in cpu.items()}
    lines = [
        "## Desktop launch: bundle and cold start (issue 15, 40)",
        "",
        f"`benchmarks/app_start.py{' --build' if build_s else ''}`: launch to the first shown window, "
        f"offscreen, {args.runs} alternating starts each, medians (compile not counted), bytecode compiled as "
        "in an installed copy; CPU is the started process's own by then. Load average during the run: "
        f"{load:.1f} on {os.cpu_count()} cores.",
        "",
        "| | wall s to a window | CPU s to a window |",
        "|---|---|---|",
        f"| bare PySide6 (QApplication, an empty QMainWindow) | {med['bare']:.2f} | {med_cpu['bare']:.2f} |",
        f"| `make run` (`.venv/bin/python -m npu_studio`) | {med['venv']:.2f} | {med_cpu['venv']:.2f} |",
        f"| **ratio** make run / bare PySide6 | **{med['venv'] / med['bare']:.2f}** | "
        f"**{med_cpu['venv'] / med_cpu['bare']:.2f}** |",
    ]
    if "baseline" in commands:
        lines.insert(-1, f"| before: `{args.baseline}`'s `python -m npu_studio` | {med['baseline']:.2f} | "
                         f"{med_cpu['baseline']:.2f} |")
    if "bundle" in commands:
        size, files = folder_bytes(BUNDLE)
        lines += [
            f"| bundle `dist/npu-studio/npu-studio` | {med['bundle']:.2f} | {med_cpu['bundle']:.2f} |",
            f"| **ratio** bundle / make run | **{med['bundle'] / med['venv']:.2f}** | "
            f"**{med_cpu['bundle'] / med_cpu['venv']:.2f}** |",
            "",
            f"- bundle (PyInstaller one-folder, `make bundle`): {size / 2**20:.0f} MiB in {files} files; largest: "
            + ", ".join(f"{name} {b / 2**20:.0f} MiB" for b, name in biggest(BUNDLE)),
        ]
    else:
        lines += ["", "- no bundle built in this run (`make bundle`, or this script with --build)"]
    if build_s is not None:
        lines.append(f"- `make bundle` wall time: {float(build_s):.0f} s ({cache}; PyInstaller, then the bundle's "
                     f"--self-test; measured by `app_start.py --build`)")
    total, shares = import_shares()
    lines.append(f"- where the start goes: importing the window's modules takes {total:.2f} s here, of which "
                 + ", ".join(f"{name} {share:.0%}" for name, share in sorted(shares.items(), key=lambda kv: -kv[1]))
                 + " (first imports, `python -X importtime`)")
    lines.append("- all starts (s): " + "; ".join(f"{name} {', '.join(f'{t:.2f}' for t in ts)}"
                                                 for name, ts in times.items()))
    body = "\n".join(lines)
    print(body)
    write_section("app-start-bench", body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
