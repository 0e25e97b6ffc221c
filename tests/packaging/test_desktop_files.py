"""Desktop integration files: validated by the freedesktop tools themselves.

desktop-file-validate (Debian: desktop-file-utils), appstreamcli (appstream) and
update-mime-database (shared-mime-info) are Debian test tools. On a machine without them
the checks that need one skip with a line naming the package; .ci/run installs them and sets
NPU_STUDIO_REQUIRE_DESKTOP_TOOLS=1, which turns a missing tool into a failure.
"""

from __future__ import annotations

import configparser
import os
import shutil
import struct
import subprocess
import sys
import tomllib
import xml.etree.ElementTree as ET

import pytest

from npu_studio.resources import APP_ID, ICON_PNG_SIZES, ICON_SVG, icon_png

from ..conftest import REPO

LINUX = REPO / "packaging" / "linux"
DESKTOP = LINUX / f"{APP_ID}.desktop"
METAINFO = LINUX / f"{APP_ID}.metainfo.xml"
MIME_XML = LINUX / f"{APP_ID}.mime.xml"
MIME_NS = "{http://www.freedesktop.org/standards/shared-mime-info}"
TOOL_PACKAGES = {"desktop-file-validate": "desktop-file-utils", "appstreamcli": "appstream",
                 "update-mime-database": "shared-mime-info"}


REQUIRE_TOOLS_VARIABLE = "NPU_STUDIO_REQUIRE_DESKTOP_TOOLS"


def tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        reason = f"{name} is not installed: apt-get install {TOOL_PACKAGES[name]}"
        if os.environ.get(REQUIRE_TOOLS_VARIABLE) == "1":
            pytest.fail(f"{reason} ({REQUIRE_TOOLS_VARIABLE}=1 requires it)")
        pytest.skip(reason)
    return path


def desktop_entry(path=DESKTOP) -> dict[str, str]:
    parser = configparser.ConfigParser(interpolation=None)
    parser.optionxform = str
    parser.read(path, encoding="utf-8")
    return dict(parser["Desktop Entry"])


def validate_desktop(path) -> None:
    proc = subprocess.run([tool("desktop-file-validate"), str(path)], capture_output=True, text=True)
    assert proc.returncode == 0 and not proc.stdout.strip(), proc.stdout + proc.stderr


def test_desktop_entry_passes_desktop_file_validate():
    validate_desktop(DESKTOP)
    entry = desktop_entry()
    assert entry["Exec"] == "npu-studio %F"
    assert "Development" in entry["Categories"].split(";")
    assert entry["Icon"] == APP_ID


def test_metainfo_passes_appstreamcli_validate():
    proc = subprocess.run([tool("appstreamcli"), "validate", "--no-net", "--pedantic", str(METAINFO)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    problems = [ln for ln in proc.stdout.splitlines() if ln[:2] in ("E:", "W:")]
    assert not problems, proc.stdout


def test_metainfo_release_is_the_package_version_and_has_notes():
    root = ET.parse(METAINFO).getroot()
    declared = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    newest = root.find("releases/release")
    assert newest.get("version") == declared
    assert newest.find("description") is not None and len(newest.find("description")) > 0
    assert root.findtext("id") == APP_ID
    assert root.find("launchable").text == DESKTOP.name
    image = root.find("screenshots/screenshot/image")
    assert image.text.endswith("docs/screenshots/main.png")
    assert (REPO / "docs" / "screenshots" / "main.png").exists()
    assert png_size(REPO / "docs" / "screenshots" / "main.png") == (int(image.get("width")), int(image.get("height")))


def test_every_mime_type_claimed_is_defined_and_recognised(tmp_path):
    """The desktop entry's MimeType= types come from our XML; shared-mime-info compiles it
    and Qt's MIME database (a separate reader of that cache) maps file names to them."""
    claimed = [t for t in desktop_entry()["MimeType"].split(";") if t]
    defined = {m.get("type"): [g.get("pattern") for g in m.iter(f"{MIME_NS}glob")]
               for m in ET.parse(MIME_XML).getroot()}
    assert set(claimed) == set(defined)
    provided = {e.text for e in ET.parse(METAINFO).getroot().iter("mediatype")}
    assert provided == set(claimed)
    share = tmp_path / "share"
    (share / "mime" / "packages").mkdir(parents=True)
    shutil.copy(MIME_XML, share / "mime" / "packages" / f"{APP_ID}.xml")
    subprocess.run([tool("update-mime-database"), str(share / "mime")], check=True, capture_output=True)
    files = {"model.onnx": "application/x-onnx", "flow.mlir": "text/x-mlir",
             "module.mlirbc": "application/x-mlir-bytecode"}
    assert sorted(files.values()) == sorted(claimed)
    code = ("from PySide6 import QtCore\n"
            "db = QtCore.QMimeDatabase()\n"
            f"for name in {sorted(files)!r}:\n"
            "    print(name, db.mimeTypeForFile(name, QtCore.QMimeDatabase.MatchMode.MatchExtension).name())\n")
    env = dict(os.environ, XDG_DATA_HOME=str(share), XDG_DATA_DIRS=f"{share}:/usr/share")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout
    assert dict(line.split() for line in out.splitlines()) == files
    # MLIR bytecode is also known by its magic, whatever the file is called.
    from iree.compiler import ir

    with ir.Context():
        module = ir.Module.parse("module {}")
    with open(tmp_path / "no_extension", "wb") as f:
        module.operation.write_bytecode(f)
    code = ("from PySide6 import QtCore\n"
            f"print(QtCore.QMimeDatabase().mimeTypeForFile({str(tmp_path / 'no_extension')!r}).name())\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout
    assert out.strip() == "application/x-mlir-bytecode"


def png_size(path) -> tuple[int, int]:
    data = path.read_bytes()[:24]
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path}: not a PNG"
    return struct.unpack(">II", data[16:24])


def test_icon_png_sizes_are_what_their_folders_say():
    assert ICON_SVG.read_text().lstrip().startswith("<?xml")
    for size in ICON_PNG_SIZES:
        assert png_size(icon_png(size)) == (size, size)


def test_the_window_icon_is_the_application_icon(qapp):
    from npu_studio.app import app_icon

    icon = app_icon()
    assert {(s.width(), s.height()) for s in icon.availableSizes()} >= {(s, s) for s in ICON_PNG_SIZES}
    # The 48 px entry is the committed PNG, pixel for pixel.
    from PySide6 import QtGui

    premultiplied = QtGui.QImage.Format.Format_ARGB32_Premultiplied  # the pixmap's own format
    shown = icon.pixmap(48, 48).toImage().convertToFormat(premultiplied)
    assert shown == QtGui.QImage(str(icon_png(48))).convertToFormat(premultiplied)


def test_install_desktop_puts_valid_files_under_xdg_data_home(tmp_path):
    launcher = tmp_path / "venv" / "bin" / "npu-studio"
    launcher.parent.mkdir(parents=True)
    launcher.write_text("#!/bin/sh\n")
    launcher.chmod(0o755)
    env = dict(os.environ, XDG_DATA_HOME=str(tmp_path / "share"))
    subprocess.run([sys.executable, str(LINUX / "install_desktop.py"), "--launcher", str(launcher),
                    "--bin-dir", str(tmp_path / "bin")], check=True, env=env, capture_output=True)
    installed = tmp_path / "share" / "applications" / DESKTOP.name
    validate_desktop(installed)
    assert desktop_entry(installed)["Exec"] == f"{launcher} %F"
    assert (tmp_path / "bin" / "npu-studio").resolve() == launcher
    assert (tmp_path / "share" / "icons" / "hicolor" / "48x48" / "apps" / f"{APP_ID}.png").exists()
    assert (tmp_path / "share" / "mime" / "application" / "x-onnx.xml").exists()  # database refreshed
    subprocess.run([sys.executable, str(LINUX / "install_desktop.py"), "--uninstall",
                    "--bin-dir", str(tmp_path / "bin")], check=True, env=env, capture_output=True)
    assert not installed.exists() and not (tmp_path / "bin" / "npu-studio").exists()


@pytest.mark.parametrize("name", sorted(TOOL_PACKAGES))
def test_a_missing_tool_skips_naming_its_package_unless_required(name, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty folder: no tool is found
    monkeypatch.delenv(REQUIRE_TOOLS_VARIABLE, raising=False)
    with pytest.raises(pytest.skip.Exception) as skipped:
        tool(name)
    assert f"apt-get install {TOOL_PACKAGES[name]}" in str(skipped.value)
    assert "\n" not in str(skipped.value)
    monkeypatch.setenv(REQUIRE_TOOLS_VARIABLE, "1")
    with pytest.raises(pytest.fail.Exception) as failed:
        tool(name)
    assert TOOL_PACKAGES[name] in str(failed.value)
