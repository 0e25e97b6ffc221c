"""Install the desktop entry, MIME types, AppStream metainfo and icons for the current user.

    python packaging/linux/install_desktop.py --launcher /path/to/venv/bin/npu-studio

Files go under $XDG_DATA_HOME (default ~/.local/share) and the launcher is
linked as ~/.local/bin/npu-studio, so `Exec=npu-studio %F` finds it; the
installed entry names the launcher by its full path as well, for desktops whose
session PATH lacks ~/.local/bin. The MIME and desktop databases are refreshed
when their tools are installed. `--uninstall` removes exactly what it put there.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ICONS = HERE.parents[1] / "resources" / "icons" / "hicolor"
APP_ID = "dev.npustudio.NpuStudio"


def data_home() -> Path:
    return Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")


def planned_files(data: Path) -> list[tuple[Path, Path]]:
    """(source, destination) of every file installed."""
    files = [
        (HERE / f"{APP_ID}.desktop", data / "applications" / f"{APP_ID}.desktop"),
        (HERE / f"{APP_ID}.metainfo.xml", data / "metainfo" / f"{APP_ID}.metainfo.xml"),
        (HERE / f"{APP_ID}.mime.xml", data / "mime" / "packages" / f"{APP_ID}.xml"),
    ]
    for icon in sorted(ICONS.rglob(f"{APP_ID}.*")):
        files.append((icon, data / "icons" / "hicolor" / icon.relative_to(ICONS)))
    return files


def refresh_databases(data: Path) -> None:
    for tool, folder in (("update-mime-database", data / "mime"),
                         ("update-desktop-database", data / "applications"),
                         ("gtk-update-icon-cache", data / "icons" / "hicolor")):
        exe = shutil.which(tool)
        if exe and folder.is_dir():
            args = [exe, "-f", "-t", str(folder)] if tool == "gtk-update-icon-cache" else [exe, str(folder)]
            subprocess.run(args, check=False, stdout=subprocess.DEVNULL)


def install(launcher: Path, data: Path, bin_dir: Path) -> None:
    for src, dest in planned_files(data):
        dest.parent.mkdir(parents=True, exist_ok=True)
        if src.suffix == ".desktop":
            exe = f'"{launcher}"' if " " in str(launcher) else str(launcher)  # desktop-entry quoting
            text = src.read_text(encoding="utf-8").replace("Exec=npu-studio ", f"Exec={exe} ")
            text = text.replace("TryExec=npu-studio", f"TryExec={launcher}")
            dest.write_text(text, encoding="utf-8")
        else:
            shutil.copyfile(src, dest)
        print(dest)
    bin_dir.mkdir(parents=True, exist_ok=True)
    link = bin_dir / "npu-studio"
    if link.is_symlink() or not link.exists():
        link.unlink(missing_ok=True)
        link.symlink_to(launcher)
        print(f"{link} -> {launcher}")
    else:
        print(f"{link}: a file of your own is there; left as it is", file=sys.stderr)
    refresh_databases(data)


def uninstall(data: Path, bin_dir: Path) -> None:
    for _, dest in planned_files(data):
        dest.unlink(missing_ok=True)
    link = bin_dir / "npu-studio"
    if link.is_symlink():
        link.unlink()
    refresh_databases(data)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--launcher", type=Path, help="the npu-studio command to start (a venv's or a bundle's)")
    parser.add_argument("--bin-dir", type=Path, default=Path.home() / ".local" / "bin")
    parser.add_argument("--uninstall", action="store_true")
    args = parser.parse_args(argv)
    if args.uninstall:
        uninstall(data_home(), args.bin_dir)
        return 0
    if args.launcher is None or not os.access(args.launcher, os.X_OK):
        parser.error(f"{args.launcher}: not an executable npu-studio launcher")
    install(args.launcher.resolve(), data_home(), args.bin_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
