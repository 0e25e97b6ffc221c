"""`module`: what a compiled .vmfb holds.

Truths: iree-dump-module run by the test itself (its exported functions,
parsed here), the archive read with zipfile, the flow phase's dispatch
index (which dispatches exist and their export names).
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import zipfile

import pytest

from npu_studio.cli import main as cli_main
from npu_studio.core.debug.module_contents import disassemble, inspect_module
from npu_studio.core.ir.dispatch_index import index_file
from npu_studio.core.workspace.workspace import Workspace, compile_model

from . import trace_models as models


def _dump_exports(vmfb) -> dict[str, str]:
    from iree import _runtime_libs

    tool = f"{_runtime_libs.__path__[0]}/iree-dump-module"
    out = subprocess.run([tool, str(vmfb)], capture_output=True, text=True, check=True).stdout
    section = out.split("Exported Functions:", 1)[1].split("\n\n", 1)[0]
    found = {}
    for line in section.splitlines():
        m = re.match(r"\s*\[\s*\d+\]\s+(\S+?)\((.*)$", line)
        if m:
            found[m.group(1)] = line.split("]", 1)[1].strip()
    return found


def test_example_exports_and_one_executable_per_dispatch(example_workspace):
    ws = example_workspace
    contents = inspect_module(ws)
    dumped = _dump_exports(ws.vmfb_path)
    ours = {f.name: f.signature for f in contents.exports}
    assert ours["SingleConv"] == dumped["SingleConv"]
    assert ours == dumped
    flow = index_file(ws.snapshot_path("flow"), "flow").dispatches
    assert len(contents.executables) == len(flow) == 1
    [exe] = contents.executables
    assert exe.dispatches == [0] and list(exe.exports) == [flow[0].export]
    with zipfile.ZipFile(ws.vmfb_path) as z:
        sizes = {i.filename: i.file_size for i in z.infolist()}
    assert exe.binary in sizes and exe.binary_bytes == sizes[exe.binary]
    assert contents.largest()[0][1] == max(sizes.values())


def test_linked_executable_serves_every_dispatch_through_its_export(tmp_path):
    ws = compile_model(models.attention(tmp_path / "a.onnx"), tmp_path / "ws")
    contents = inspect_module(ws)
    flow = index_file(ws.snapshot_path("flow"), "flow").dispatches
    served = sorted(i for e in contents.executables for i in e.dispatches)
    assert served == [r.index for r in flow]  # each dispatch by exactly one executable
    for e in contents.executables:
        for export, dispatches in e.exports.items():
            assert {flow[i].export for i in dispatches} == {export}
    with zipfile.ZipFile(ws.vmfb_path) as z:
        const = sum(i.file_size for i in z.infolist() if i.filename.startswith("_const"))
    assert contents.constants_bytes == const > 0
    if shutil.which("objdump") or shutil.which("llvm-objdump"):
        exe = contents.executables[0]
        text = disassemble(ws, exe.name)
        headed = [ln for ln in text.splitlines() if ln.startswith("; dispatches ")]
        assert len(headed) == len(exe.exports)


def test_cli_json_and_a_workspace_without_build(example_workspace, tmp_path, capsys):
    assert cli_main(["module", str(example_workspace.root), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["format"] == "npu-studio.module" and data["executables"][0]["dispatches"] == [0]

    ws = Workspace.create(models.mlp_bias(tmp_path / "m.onnx"), tmp_path / "ws")
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in sorted(ws.root.rglob("*")) if p.is_file())).hexdigest()
    assert cli_main(["module", str(ws.root)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "compile first" in err
    assert hashlib.sha256(b"".join(p.read_bytes() for p in sorted(ws.root.rglob("*"))
                                   if p.is_file())).hexdigest() == digest
    assert cli_main(["module", str(example_workspace.root), "--disassemble", "nope"]) == 2
    assert "no executable 'nope'" in capsys.readouterr().err


@pytest.mark.parametrize("bad", ["not a vmfb"])
def test_a_corrupt_module_is_one_line(example_workspace, tmp_path, capsys, bad):
    shutil.copytree(example_workspace.root, tmp_path / "ws")
    ws = Workspace.open(tmp_path / "ws")
    ws.vmfb_path.write_text(bad)
    assert cli_main(["module", str(ws.root)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(ws.vmfb_path) in err
