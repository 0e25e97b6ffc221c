"""Hostile inputs: every one is refused with exit code 2 and one line naming the file.

Each case runs the CLI in-process (`cli.main(argv)`), then checks: exit code
2, exactly one line on stderr, the offending file named in it, no
traceback, and a good workspace byte-identical to before (several cases
point `--workspace` at it on purpose).
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from npu_studio.cli import main

from ..conftest import EXAMPLE, REPO
from .bad_models import write_bad_models

TARGET_TOML = (REPO / "resources" / "targets" / "tiny.toml").read_text()
BAD_UTF8 = b"\xff\xfe not text \xc3\x28"
SYNTAX_ERROR = "func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n  %0 = arith.addf %a, %a :\n}\n"
VERIFY_ERROR = ("func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
                "  %0 = arith.addf %a, %a : tensor<8xf32>\n  return %0 : tensor<4xf32>\n}\n")
# Not part of the workspace's state: a failed compile leaves its crash reproducer
# next to the (unchanged) build. `.lock` is compared too: a failure leaves it as it was.
NOT_STATE = {"crash-reproducer.mlir"}


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and p.name not in NOT_STATE}


@pytest.fixture(scope="module")
def good(example_workspace, tmp_path_factory):
    """A good, compiled workspace that no case may change."""
    dest = tmp_path_factory.mktemp("hostile") / "good"
    shutil.copytree(example_workspace.root, dest)
    return dest


@pytest.fixture(scope="module")
def good_tree(good):
    return tree(good)


def copy_of(good: Path, tmp: Path) -> Path:
    dest = tmp / "ws"
    shutil.copytree(good, dest)
    return dest


def write(path: Path, content: bytes | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    return path


def npy(path: Path, array) -> Path:
    np.save(path, array, allow_pickle=True)
    return path


def onnx_model(path: Path, nodes, inputs, outputs, initializers=(), opset=17, ir_version=None) -> Path:
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    if ir_version is not None:
        model.ir_version = ir_version
    onnx.save(model, path)
    return path


def vi(name, shape, elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, shape)


def manifest_edit(change):
    def case(t, g):
        ws = copy_of(g, t)
        data = json.loads((ws / "manifest.json").read_text())
        result = change(data, ws)
        (ws / "manifest.json").write_text(json.dumps(data) if result is None else result)
        return ["run", ws], ws / "manifest.json"
    return case


def broken_ws(damage, command=("run",), named=lambda ws: ws):
    def case(t, g):
        ws = copy_of(g, t)
        damage(ws)
        return [command[0], ws, *command[1:]], named(ws)
    return case


def target_file(text_or_bytes, *extra):
    def case(t, g):
        path = write(t / "target.toml", text_or_bytes)
        return ["npu", g, "--target", path, *extra], path
    return case


def toml_with(old: str, new: str) -> bytes:
    assert old in TARGET_TOML
    return TARGET_TOML.replace(old, new, 1).encode()


def npy_input(make):
    def case(t, g):
        path = make(t)
        return ["run", g, "--input", path], path
    return case


def huge_header(t: Path) -> Path:
    """A valid .npy header that claims a petabyte of float32, followed by 16 bytes."""
    path = t / "huge.npy"
    with open(path, "wb") as f:
        np.lib.format.write_array_header_1_0(
            f, {"descr": "<f4", "fortran_order": False, "shape": (1, 3, 500, 166_666_667_000)})
        f.write(b"\0" * 16)
    return path


def truncated_npy(t: Path) -> Path:
    path = npy(t / "short.npy", np.zeros((1, 3, 500, 500), np.float32))
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 3])
    return path


def compile_into_good(make):
    def case(t, g):
        path = make(t)
        return ["compile", path, "--workspace", g], path
    return case


def bad_model(kind):
    return compile_into_good(lambda t: write_bad_models(t, EXAMPLE)[kind])


ONNX_CASES = {
    "onnx-empty": bad_model("empty"),
    "onnx-truncated": bad_model("truncated"),
    "onnx-corrupt": bad_model("corrupt"),
    "onnx-unknown-op": bad_model("unknown_op"),
    "onnx-unsupported-op": bad_model("unsupported_op"),
    "onnx-missing-external-data": bad_model("missing_external_data"),
    "onnx-missing-file": compile_into_good(lambda t: t / "nowhere.onnx"),
    "onnx-is-a-folder": compile_into_good(lambda t: (t / "folder.onnx").mkdir() or t / "folder.onnx"),
    "onnx-text": compile_into_good(lambda t: write(t / "notes.onnx", "this is not a model\n")),
    "onnx-wrong-suffix": compile_into_good(lambda t: write(t / "model.txt", EXAMPLE.read_bytes())),
    "onnx-undefined-input": compile_into_good(lambda t: onnx_model(
        t / "dangling.onnx", [helper.make_node("Relu", ["nowhere"], ["y"], name="r")], [vi("x", [4])],
        [vi("y", [4])])),
    "onnx-output-never-made": compile_into_good(lambda t: onnx_model(
        t / "orphan.onnx", [helper.make_node("Relu", ["x"], ["y"], name="r")], [vi("x", [4])], [vi("z", [4])])),
    "onnx-non-utf8-name": compile_into_good(lambda t: write(Path(os.fsdecode(bytes(t) + b"/m\xff\xfe.onnx")), b"")),
    "onnx-external-data-escapes": compile_into_good(lambda t: _escaping_external_data(t)),
}


def _escaping_external_data(t: Path) -> Path:
    model = onnx.load(EXAMPLE)
    for tensor in model.graph.initializer:
        tensor.data_location = TensorProto.EXTERNAL
        del tensor.external_data[:]
        entry = tensor.external_data.add()
        entry.key, entry.value = "location", "../../../../etc/hostname"
        tensor.ClearField("raw_data")
        tensor.ClearField("float_data")
    path = t / "deep" / "er" / "escape.onnx"
    path.parent.mkdir(parents=True)
    onnx.save(model, path)
    return path


MLIR_CASES = {
    "mlir-non-utf8": compile_into_good(lambda t: write(t / "bytes.mlir", b"func.func @f() {\n" + BAD_UTF8)),
    "mlir-empty": compile_into_good(lambda t: write(t / "empty.mlir", b"")),
    "mlir-syntax-error": compile_into_good(lambda t: write(t / "syntax.mlir", SYNTAX_ERROR)),
    "mlir-verify-error": compile_into_good(lambda t: write(t / "verify.mlir", VERIFY_ERROR)),
    "mlirbc-garbage": compile_into_good(lambda t: write(t / "garbage.mlirbc", b"ML\xefR" + os.urandom(64))),
    "mlir-missing": compile_into_good(lambda t: t / "gone.mlir"),
    "resume-syntax-error": lambda t, g: (["resume", write(t / "flow.mlir", SYNTAX_ERROR), "--from", "flow",
                                          "--workspace", g], t / "flow.mlir"),
    "resume-verify-error": lambda t, g: (["resume", write(t / "flow.mlir", VERIFY_ERROR), "--from", "flow",
                                          "--workspace", g], t / "flow.mlir"),
    "resume-non-utf8": lambda t, g: (["resume", write(t / "flow.mlir", BAD_UTF8), "--from", "flow",
                                      "--workspace", g], t / "flow.mlir"),
    "resume-outside-workspace": lambda t, g: (["resume", write(t / "x.mlir", SYNTAX_ERROR)], t / "x.mlir"),
    "resume-missing-file": lambda t, g: (["resume", t / "gone.mlir", "--workspace", g], t / "gone.mlir"),
    "resume-wrong-phase": lambda t, g: (["resume", g / "phases" / "07.stream.mlir", "--from", "flow"],
                                        g / "phases" / "07.stream.mlir"),
    "npu-flow-mlir-syntax-error": lambda t, g: (["npu", write(t / "flow.mlir", SYNTAX_ERROR)], t / "flow.mlir"),
    "npu-flow-mlir-non-utf8": lambda t, g: (["npu", write(t / "flow.mlir", BAD_UTF8)], t / "flow.mlir"),
}


def _link_vmfb_outside(ws: Path) -> None:
    outside = write(ws.parent / "elsewhere.vmfb", (ws / "module.vmfb").read_bytes())
    (ws / "module.vmfb").unlink()
    (ws / "module.vmfb").symlink_to(outside)


WORKSPACE_CASES = {
    "manifest-not-json": manifest_edit(lambda d, ws: "{ not json"),
    "manifest-a-list": manifest_edit(lambda d, ws: "[1, 2, 3]"),
    "manifest-empty": manifest_edit(lambda d, ws: ""),
    "manifest-non-utf8": broken_ws(lambda ws: write(ws / "manifest.json", BAD_UTF8),
                                   named=lambda ws: ws / "manifest.json"),
    "manifest-wrong-version": manifest_edit(lambda d, ws: d.update(version=7)),
    "manifest-missing-source": manifest_edit(lambda d, ws: d.pop("source") and None),
    "manifest-phase-not-object": manifest_edit(lambda d, ws: d["phases"].update(flow="phases/06.flow.mlir")),
    "manifest-bad-state": manifest_edit(lambda d, ws: d["phases"]["flow"].update(state="glorious")),
    "manifest-vmfb-parent": manifest_edit(lambda d, ws: d.update(vmfb="../elsewhere.vmfb")),
    "manifest-vmfb-absolute": manifest_edit(lambda d, ws: d.update(vmfb="/tmp/elsewhere.vmfb")),
    "manifest-snapshot-escapes": manifest_edit(lambda d, ws: d["phases"]["input"].update(file="phases/../../x")),
    "manifest-unknown-backend": manifest_edit(lambda d, ws: d.update(target="gpu-of-dreams")),
    "manifest-size-negative": manifest_edit(lambda d, ws: d["phases"]["flow"].update(size_bytes=-1)),
    "vmfb-symlink-outside": broken_ws(_link_vmfb_outside, named=lambda ws: ws / "manifest.json"),
    "manifest-is-a-folder": broken_ws(lambda ws: ((ws / "manifest.json").unlink(), (ws / "manifest.json").mkdir()),
                                      named=lambda ws: ws / "manifest.json"),
    "no-manifest": broken_ws(lambda ws: (ws / "manifest.json").unlink()),
    "workspace-is-a-file": lambda t, g: (["run", write(t / "ws", "plain file")], t / "ws"),
    "workspace-missing": lambda t, g: (["dispatches", t / "nowhere"], t / "nowhere"),
    "deleted-flow-snapshot": broken_ws(lambda ws: (ws / "phases" / "06.flow.mlir").unlink(), ("dispatches",)),
    "deleted-input-snapshot": broken_ws(lambda ws: (ws / "phases" / "01.input.mlir").unlink(),
                                        named=lambda ws: ws / "phases" / "01.input.mlir"),
    "deleted-vmfb": broken_ws(lambda ws: (ws / "module.vmfb").unlink()),
    "non-utf8-flow-snapshot": broken_ws(lambda ws: write(ws / "phases" / "06.flow.mlir", BAD_UTF8), ("dispatches",),
                                        named=lambda ws: ws / "phases" / "06.flow.mlir"),
    "non-utf8-flow-snapshot-npu": broken_ws(lambda ws: write(ws / "phases" / "06.flow.mlir", BAD_UTF8), ("npu",),
                                            named=lambda ws: ws / "phases" / "06.flow.mlir"),
    "garbage-input-snapshot": broken_ws(lambda ws: write(ws / "phases" / "01.input.mlir", SYNTAX_ERROR),
                                        named=lambda ws: ws / "phases" / "01.input.mlir"),
    "garbage-publish-journal": broken_ws(lambda ws: write(ws / "publish.journal", "{half"),
                                         named=lambda ws: ws / "publish.journal"),
    "compile-into-a-file": lambda t, g: (["compile", EXAMPLE, "--workspace", write(t / "f", "x")], t / "f"),
    "compile-under-a-file": lambda t, g: (["compile", EXAMPLE, "--workspace", write(t / "f", "x") / "ws"], t / "f"),
    "compile-into-foreign-folder": lambda t, g: (["compile", EXAMPLE, "--workspace", write(t / "mine" / "thesis.tex",
                                                  "mine").parent], t / "mine"),
    "compile-into-broken-manifest": lambda t, g: (["compile", EXAMPLE, "--workspace",
                                                   write(copy_of(g, t) / "manifest.json", "[]").parent],
                                                  t / "ws" / "manifest.json"),
}

NPY_CASES = {
    "npy-text": npy_input(lambda t: write(t / "x.npy", "1 2 3\n")),
    "npy-empty": npy_input(lambda t: write(t / "x.npy", b"")),
    "npy-pickled": npy_input(lambda t: npy(t / "x.npy", np.array([{"a": 1}, None], dtype=object))),
    "npy-raw-pickle": npy_input(lambda t: write(t / "x.npy", pickle.dumps([1, 2, 3]))),
    "npy-petabyte-header": npy_input(huge_header),
    "npy-truncated": npy_input(truncated_npy),
    "npy-wrong-dtype": npy_input(lambda t: npy(t / "x.npy", np.zeros((1, 3, 500, 500), np.float64))),
    "npy-wrong-shape": npy_input(lambda t: npy(t / "x.npy", np.zeros((1, 3, 50, 50), np.float32))),
    "npy-wrong-rank": npy_input(lambda t: npy(t / "x.npy", np.zeros((3, 500, 500), np.float32))),
    "npy-broken-header": npy_input(lambda t: write(t / "x.npy", b"\x93NUMPY\x01\x00\x10\x00{'descr': <f4'}   \n")),
    "npy-is-a-folder": npy_input(lambda t: (t / "x.npy").mkdir() or t / "x.npy"),
    "npy-missing": npy_input(lambda t: t / "x.npy"),
    "npy-too-many": lambda t, g: (["run", g, "--input", npy(t / "a.npy", np.zeros((1, 3, 500, 500), np.float32)),
                                   "--input", t / "a.npy"], g),
    "output-dir-is-a-file": lambda t, g: (["run", g, "--output-dir", write(t / "out", "x")], t / "out"),
    "output-dir-under-a-file": lambda t, g: (["run", g, "--output-dir", write(t / "out", "x") / "sub"], t / "out"),
}

TARGET_CASES = {
    "toml-non-utf8": target_file(b'name = "x"\n# ' + BAD_UTF8),
    "toml-syntax": target_file(toml_with("clock_mhz = 400", "clock_mhz = = 400")),
    "toml-unknown-table": target_file(TARGET_TOML + "\n[turbo]\nboost = 2\n"),
    "toml-unknown-key": target_file(toml_with("rows = 8", "rows = 8\nrowz = 9")),
    "toml-missing-key": target_file(toml_with("clock_mhz = 400\n", "")),
    "toml-string-for-int": target_file(toml_with("rows = 8", 'rows = "eight"')),
    "toml-bool-for-int": target_file(toml_with("lanes = 16", "lanes = true")),
    "toml-negative": target_file(toml_with("size_kib = 64", "size_kib = -64")),
    "toml-list-in-dtypes": target_file(toml_with('supported = ["f16", "bf16", "i8"]', 'supported = [["f16"], "i8"]')),
    "toml-table-in-ops": target_file(toml_with('supported = ["conv",', 'supported = [{ a = 1 }, "conv",')),
    "toml-unknown-op": target_file(toml_with('supported = ["conv",', 'supported = ["warp_drive", "conv",')),
    "toml-bad-dataflow": target_file(toml_with('dataflow = "weight-stationary"', 'dataflow = "sideways"')),
    "toml-empty": target_file(b""),
    "toml-missing": lambda t, g: (["npu", g, "--target", t / "gone.toml"], t / "gone.toml"),
    "toml-folder": lambda t, g: (["npu", g, "--target", t], t),
    "npu-json-is-a-folder": lambda t, g: (["npu", g, "--json", t], t),
    "npu-json-missing-folder": lambda t, g: (["npu", g, "--json", t / "no" / "p.json"], t / "no" / "p.json"),
    "npu-mlir-is-a-folder": lambda t, g: (["npu", g, "--mlir", t], t),
    "npu-mlir-missing-folder": lambda t, g: (["npu", g, "--mlir", t / "no" / "p.mlir"], t / "no" / "p.mlir"),
}

def _flow_of(ws: Path) -> Path:
    return ws / "phases" / "06.flow.mlir"


def _planned(damage):
    """`damage` after a plain `simulate` has planned the workspace (the NPU program is then kept and the
    check reads the flow snapshot only to build IREE's dispatch module)."""
    def planned(ws: Path) -> None:
        assert main(["simulate", str(ws), "--trust"]) == 0
        damage(ws)
    return planned


def _truncate_flow(ws: Path) -> None:
    flow = _flow_of(ws)
    flow.write_text(flow.read_text()[:3000])  # cut mid-module, as a crashed editor leaves it


OTHER_COMMAND_CASES = {
    "simulate-npu-json-not-json": lambda t, g: (["simulate", write(t / "p.npu.json", "{half")], t / "p.npu.json"),
    "simulate-npu-json-other-format": lambda t, g: (["simulate", write(t / "p.npu.json", '{"format": "x"}')],
                                                    t / "p.npu.json"),
    "simulate-target-non-utf8": lambda t, g: (["simulate", g, "--target", write(t / "t.toml", BAD_UTF8)],
                                              t / "t.toml"),
    "simulate-json-is-a-folder": lambda t, g: (["simulate", g, "--json", t], t),
    "simulate-csv-missing-folder": lambda t, g: (["simulate", g, "--csv", t / "no" / "x.csv"], t / "no" / "x.csv"),
    "diff-output-missing-folder": lambda t, g: (["diff", g, "flow", "-o", t / "no" / "x.diff"], t / "no" / "x.diff"),
    "diff-output-is-a-folder": lambda t, g: (["diff", g, "flow", "-o", t], t),
    "diff-non-utf8-snapshot": broken_ws(lambda ws: write(ws / "phases" / "06.flow.mlir", BAD_UTF8),
                                        ("diff", "flow"), named=lambda ws: ws / "phases" / "06.flow.mlir"),
    "passes-workspace-is-a-file": lambda t, g: (["passes", write(t / "ws", "x"), "flow"], t / "ws"),
    # eyes35: the NPU check built its dispatch module from the flow snapshot unchecked (a traceback)
    "simulate-check-truncated-flow": broken_ws(_planned(_truncate_flow), ("simulate", "--check", "--trust"), named=_flow_of),
    "run-npu-truncated-flow": broken_ws(_planned(_truncate_flow), ("run", "--npu", "--trust"), named=_flow_of),
    "simulate-check-missing-flow": broken_ws(_planned(lambda ws: _flow_of(ws).unlink()),
                                             ("simulate", "--check", "--trust"), named=_flow_of),
    "run-npu-missing-flow": broken_ws(_planned(lambda ws: _flow_of(ws).unlink()),
                                      ("run", "--npu", "--trust"), named=_flow_of),
}

CASES = {**ONNX_CASES, **MLIR_CASES, **WORKSPACE_CASES, **NPY_CASES, **TARGET_CASES, **OTHER_COMMAND_CASES}


def shown(path: Path) -> str:
    """A path as the one-line error prints it (undecodable bytes escaped)."""
    return str(path).encode("utf-8", "backslashreplace").decode().replace("\n", "\\n")


@pytest.mark.parametrize("case", list(CASES))
def test_hostile_input_gives_one_line_and_exit_2(case, good, good_tree, tmp_path, capsys):
    argv, named = CASES[case](tmp_path, good)
    code = main([os.fsdecode(a) if isinstance(a, bytes) else str(a) for a in argv])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("npu-studio: error: ")
    assert shown(named) in lines[0], lines[0]
    assert tree(good) == good_tree, "the good workspace changed"



BIG_AND_EMPTY = """
func.func @big(%a: tensor<1000000x1000000xf32>) -> tensor<1000000x1000000xf32> {
  %0 = arith.negf %a : tensor<1000000x1000000xf32>
  return %0 : tensor<1000000x1000000xf32>
}
func.func @empty(%a: tensor<0x4xf32>) -> tensor<0x4xf32> {
  %0 = arith.negf %a : tensor<0x4xf32>
  return %0 : tensor<0x4xf32>
}
"""


@pytest.fixture(scope="module")
def big_and_empty(tmp_path_factory):
    """A module whose first input (4 TB) cannot be allocated and whose second function returns nothing."""
    from npu_studio.core.workspace.workspace import compile_model

    folder = tmp_path_factory.mktemp("big")
    return compile_model(write(folder / "big.mlir", BIG_AND_EMPTY), folder / "ws")


def test_an_input_too_large_to_allocate_is_refused_with_its_size(big_and_empty, capsys):
    assert main(["run", str(big_and_empty.root), "--function", "big"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert str(big_and_empty.user_model_path) in line
    assert f"needs {10**12 * 4} bytes" in line  # 10^12 float32 elements


def test_a_zero_size_output_is_reported_not_a_crash(big_and_empty, capsys, tmp_path):
    assert main(["run", str(big_and_empty.root), "--function", "empty", "--output-dir", str(tmp_path / "out")]) == 0
    assert capsys.readouterr().out.strip() == "output0: float32 0x4 (empty)"
    assert np.load(tmp_path / "out" / "output0.npy").shape == (0, 4)


@pytest.mark.parametrize("content", ["{not json", "[]", '{"format": "npu-studio.npu-ir", "version": 1}',
                                     '{"format": "other"}'], ids=["not-json", "list", "no-keys", "wrong-format"])
def test_a_bad_npu_ir_file_names_itself(tmp_path, content):
    from npu_studio.core.errors import StudioError
    from npu_studio.core.npu.program.npu_ir import NpuProgram

    path = write(tmp_path / "model.npu.json", content)
    with pytest.raises(StudioError) as info:
        NpuProgram.load(path)
    assert info.value.path == path and "\n" not in str(info.value)
