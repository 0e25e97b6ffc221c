"""The one `apt-get install` line (README, and printed when Qt's xcb plugin cannot load)
covers every library that plugin needs, as the system's own tools see it: ldd lists the
libraries, dpkg names their packages and the packages they depend on."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import PySide6

from npu_studio.qt_platform import APT_LINE, APT_PACKAGES

from ..conftest import REPO

QT = Path(PySide6.__file__).parent / "Qt"
PLUGIN = QT / "plugins" / "platforms" / "libqxcb.so"


def needed_libraries() -> dict[str, str | None]:
    """soname -> resolved path (None: not found) for the plugin and the Qt libraries it loads."""
    libs: dict[str, str | None] = {}
    for binary in [PLUGIN, *sorted((QT / "lib").glob("libQt6*.so.6"))]:
        if binary.name.split(".")[0] not in ("libqxcb", "libQt6XcbQpa", "libQt6Gui", "libQt6Core",
                                               "libQt6Widgets", "libQt6DBus", "libQt6OpenGL"):
            continue
        out = subprocess.run(["ldd", str(binary)], capture_output=True, text=True, check=True).stdout
        for soname, target in re.findall(r"^\s*(\S+) => (.+?)(?: \(0x[0-9a-f]+\))?$", out, re.M):
            if str(QT) not in target:
                libs[soname] = None if target == "not found" else target
    return libs


def debian_name(soname: str) -> str:
    """Debian Policy 8.1: libfoo.so.N is packaged as libfooN (libfoo-N when foo ends in a digit)."""
    name, version = re.fullmatch(r"(.+)\.so\.(\d+)", soname).groups()
    return f"{name}-{version}".lower() if name[-1].isdigit() else f"{name}{version}".lower()


def dpkg_status() -> dict[str, tuple[bool, list[str]]]:
    """package -> (essential, the packages it depends on), for what is installed."""
    out = subprocess.run(["dpkg-query", "-W", "-f", "${Package}\t${Essential}\t${Pre-Depends}, ${Depends}\n"],
                         capture_output=True, text=True, check=True).stdout
    status = {}
    for line in out.splitlines():
        package, essential, depends = line.split("\t")
        names = [re.split(r"[\s:(]", alt.strip())[0] for dep in depends.split(",") for alt in dep.split("|")]
        status[package] = (essential == "yes", [n for n in names if n])
    return status


def closure(roots, status) -> set[str]:
    seen, todo = set(), list(roots)
    while todo:
        package = todo.pop()
        if package in seen:
            continue
        seen.add(package)
        todo.extend(status.get(package, (False, []))[1])
    return seen


def owners(paths) -> dict[str, str]:
    """path -> the Debian package that installed it (one dpkg call; /lib is /usr/lib on merged-/usr)."""
    variants = {}
    for path in paths:
        real = os.path.realpath(path)
        for candidate in {path, real, real.replace("/usr/lib/", "/lib/", 1), real.replace("/lib/", "/usr/lib/", 1)}:
            variants[candidate] = path
    out = subprocess.run(["dpkg", "-S", *sorted(variants)], capture_output=True, text=True).stdout
    found = {}
    for line in out.splitlines():
        package, _, owned = line.partition(": ")
        if owned in variants:
            found[variants[owned]] = package.split(":")[0]
    return found


def test_apt_line_covers_every_library_the_xcb_plugin_loads():
    status = dpkg_status()
    # A minimal Debian has the essential packages and apt, with what they depend on.
    base = closure([p for p, (essential, _) in status.items() if essential] + ["apt"], status)
    ours = closure(APT_PACKAGES, status)
    libs = needed_libraries()
    package_of = owners([p for p in libs.values() if p])
    missing = []
    for soname, path in libs.items():
        assert path is None or path in package_of, f"{path}: no Debian package owns it"
        package = package_of[path] if path else debian_name(soname)
        if package not in base and package not in ours:
            missing.append(f"{soname} ({package})")
    assert not missing, f"not brought in by the apt-get line: {', '.join(missing)}"


def test_readme_names_the_same_packages_in_one_apt_line():
    lines = [ln for ln in (REPO / "README.md").read_text().splitlines()
             if ln.startswith("sudo apt-get install python3-venv ")]
    assert len(lines) == 1
    assert lines[0].split()[3:] == ["python3-venv", *APT_PACKAGES]


def test_app_prints_the_apt_line_when_the_xcb_plugin_cannot_load(tmp_path):
    """Whether it can load is what ldd says; the app must agree, and never show Qt's own message."""
    unresolved = [so for so, path in needed_libraries().items() if path is None]
    env = dict(os.environ, QT_QPA_PLATFORM="xcb", DISPLAY=":97", HOME=str(tmp_path),
               XDG_CONFIG_HOME=str(tmp_path / "config"))
    proc = subprocess.run([sys.executable, "-m", "npu_studio"], capture_output=True, text=True, env=env,
                          timeout=120)
    if unresolved:
        assert proc.returncode == 1
        lines = proc.stderr.splitlines()
        assert lines[-1].strip() == APT_LINE and sum("apt-get install" in ln for ln in lines) == 1
        assert any(so in lines[0] for so in unresolved), lines[0]
        assert "This application failed to start" not in proc.stderr
        for so in unresolved:
            assert debian_name(so) in APT_PACKAGES
    else:  # every library is there: Qt gets to try the (absent) display and we print nothing
        assert "apt-get" not in proc.stderr
        assert proc.returncode != 0
