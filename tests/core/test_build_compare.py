"""Two builds side by side, and flag bisection."""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from npu_studio.core.debug.build_compare import compare, elf_bytes
from npu_studio.core.debug.compile_profile import ProfileJob
from npu_studio.core.debug.flag_bisect import BisectJob, ddmin
from npu_studio.core.run.runner import pick_function, random_inputs, run_vmfb
from npu_studio.core.workspace import variants
from npu_studio.core.workspace.workspace import compile_model

from .onnx_reference import run_onnxruntime
from .test_hostile_inputs import tree

# Demotes the inputs of every contraction (to f16, the type the next flag names, its default).
DEMOTE = "--iree-global-opt-demote-contraction-inputs-operations=all"
TO_F16 = "--iree-global-opt-demote-contraction-inputs-type=f16"  # no effect without DEMOTE
HARMLESS = ["--iree-opt-strip-assertions", "--iree-vm-bytecode-module-strip-source-map"]


def test_identical_variants_show_no_difference(fresh_example):
    variants.create(fresh_example, "again")
    variants.build(fresh_example, "again")
    before = tree(fresh_example.root)
    r = compare(fresh_example, "main", "again")
    assert r.first_difference is None and r.diff == ""
    assert r.outputs and r.same_outputs and r.no_difference
    assert r.dispatches == (1, 1) and r.executables == (1, 1)
    assert tree(fresh_example.root) == before  # a comparison writes nothing


def test_a_flag_that_changes_the_ir_shows_the_first_differing_phase(fresh_example):
    variants.create(fresh_example, "generic", "--iree-llvmcpu-target-cpu=generic")
    variants.build(fresh_example, "generic")
    r = compare(fresh_example, "main", "generic")
    # The target CPU is written into the executable target attribute: the first phase that has one differs.
    first_with_target = next(p for p, path in fresh_example.snapshots().items()
                             if "#hal.executable.target<" in path.read_text())
    assert r.first_difference == first_with_target
    assert '-#executable_target' in r.diff and 'cpu = "generic"' in r.diff and "loc(" not in r.diff
    assert r.diff_counts[0] >= 1 and r.diff_counts[1] >= 1
    # Sizes read from the modules themselves: the vmfb's bytes, and ELF objects inside it.
    main_vmfb, gen_vmfb = fresh_example.vmfb_path, variants.get(fresh_example, "generic").vmfb_path
    assert r.vmfb_bytes == (main_vmfb.stat().st_size, gen_vmfb.stat().st_size)
    assert r.executable_bytes[0] is not None and 0 < r.executable_bytes[0] < r.vmfb_bytes[0]


def test_elf_size_is_read_from_the_elf_header(tmp_path):
    # A 64-bit little-endian ELF header: section headers at 0x100, 3 of 64 bytes: the object is 0x1C0 bytes.
    header = bytearray(64)
    header[:6] = b"\x7fELF\x02\x01"
    header[0x28:0x30] = (0x100).to_bytes(8, "little")
    header[0x3A:0x3C], header[0x3C:0x3E] = (64).to_bytes(2, "little"), (3).to_bytes(2, "little")
    obj = bytes(header) + bytes(0x1C0 - 64)
    path = tmp_path / "m.vmfb"
    path.write_bytes(b"prefix" + obj + b"between" + obj + b"suffix")
    assert elf_bytes(path) == 2 * 0x1C0


def test_pass_time_changes_come_from_both_profiles(fresh_example):
    variants.create(fresh_example, "again")
    variants.build(fresh_example, "again")
    a, b = ProfileJob(fresh_example, "main").run(), ProfileJob(fresh_example, "again").run()
    r = compare(fresh_example, "main", "again", run_outputs=False)
    assert r.passes
    top = r.passes[0]
    wa = {p.name: p.wall for p in a.phases[top.phase].passes}.get(top.name, 0.0)
    wb = {p.name: p.wall for p in b.phases[top.phase].passes}.get(top.name, 0.0)
    assert (top.a_wall, top.b_wall) == (wa, wb)
    assert all(abs(p.change) <= abs(top.change) for p in r.passes)


def test_ddmin_finds_the_one_change_and_pairs():
    calls = []

    def differs(c):
        calls.append(list(c))
        return "c" in c

    assert ddmin(list("abcdefgh"), differs) == ["c"]
    assert ddmin(list("abcdefgh"), lambda c: "b" in c and "g" in c) == ["b", "g"]


@pytest.fixture(scope="module")
def matmul_ws(tmp_path_factory):
    """A MatMul model: demoting contraction inputs to f16 changes its outputs visibly."""
    folder = tmp_path_factory.mktemp("matmul")
    rng = np.random.default_rng(1)
    w = numpy_helper.from_array(rng.standard_normal((256, 64)).astype(np.float32), "w")
    node = helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 256])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 64])], initializer=[w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 10
    path = folder / "mm.onnx"
    onnx.save(model, path)
    return compile_model(path, folder / "ws")


def test_bisection_names_the_output_changing_flag_alone(matmul_ws):
    ws = matmul_ws
    variants.create(ws, "base", [TO_F16])
    variants.create(ws, "three", [TO_F16, HARMLESS[0], DEMOTE, HARMLESS[1]])
    before = tree(ws.root)
    result = BisectJob(ws, "base", "three").run()
    assert result.changes == [f"+{HARMLESS[0]}", f"+{DEMOTE}", f"+{HARMLESS[1]}"]
    assert result.culprit == [f"+{DEMOTE}"]
    assert tree(ws.root) == before  # trial builds are never kept
    # Independent check of what the flag does: the main build agrees with onnxruntime, the demoted one does not.
    variants.create(ws, "demoted", [DEMOTE])
    demoted = variants.build(ws, "demoted")
    sig = pick_function(ws.snapshot_path("input"))
    inputs = random_inputs(sig, seed=0)
    ref = run_onnxruntime(ws.source_path, inputs)[0]
    assert np.max(np.abs(run_vmfb(ws.vmfb_path, sig.name, inputs, parameters=ws.params_path)[0] - ref)) < 1e-4
    assert np.max(np.abs(run_vmfb(demoted.vmfb_path, sig.name, inputs, parameters=ws.params_path)[0] - ref)) > 1e-3
    r = compare(ws, "main", "demoted")
    assert not r.same_outputs and r.first_difference is not None


def test_cli_compare_json_and_bad_input(fresh_example):
    from .test_cli import cli

    variants.create(fresh_example, "again")
    variants.build(fresh_example, "again")
    proc = cli("compare", fresh_example.root, "main", "again", "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["no_difference"] is True and data["first_difference"] is None
    before = tree(fresh_example.root)
    for args in (["main", "nope"], ["main", "again", "--tolerance", "-1"], ["main", "again", "--bisect-flags"]):
        bad = cli("compare", fresh_example.root, *args)
        assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1, bad.stderr
        assert "Traceback" not in bad.stderr
    assert tree(fresh_example.root) == before
