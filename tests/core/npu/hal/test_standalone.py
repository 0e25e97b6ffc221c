"""`run --npu --standalone`: iree-run-module runs the NPU variant, the plugin's C interpreter computes the NPU dispatches.

Independent truths: onnxruntime on the same inputs; IREE's CPU build of
each dispatch on the operands the plugin saw (the per-call check); a
requantized tile worked out by hand (quant_models / test_quantized_numerics).
"""

from __future__ import annotations

import dataclasses
import shutil
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest

from npu_studio.cli import main
from npu_studio.core import processes
from npu_studio.core.compile import toolchain
from npu_studio.core.errors import BadFile, StudioError
from npu_studio.core.npu.hal import standalone
from npu_studio.core.npu.hal.exec_binary import load_program
from npu_studio.core.npu.hal.exec_desc import ENV_PATH
from npu_studio.core.npu.hal.npu_run import run_npu
from npu_studio.core.npu.hal.plugin_build import plugin_path
from npu_studio.core.npu.hal.variant import build_variant
from npu_studio.core.npu.numerics import TileFault
from npu_studio.core.npu.store.workspace_io import run_for_workspace
from npu_studio.core.workspace.workspace import Workspace, compile_model
from tests.core.npu.npu_models import attention, i8_matmul
from tests.core.npu.numerics import check_models as models
from tests.core.onnx_reference import run_onnxruntime

sys.path.insert(0, str(Path(__file__).parents[1]))  # quant_models, as the quantization tests import it
from quant_models import TIE_X, conv_relu_model, decoder_model, quantized, tie_model

HAND_Y = np.array([[[[5, 5], [7, 1]], [[-32, -47], [-128, -12]]]], np.int8)  # test_quantized_numerics


def _close(ours, ref, rel=1e-4):
    ours, ref = np.asarray(ours, np.float64), np.asarray(ref, np.float64)
    return np.max(np.abs(ours - ref)) <= rel * max(1.0, np.max(np.abs(ref)))


def _npu_sites(program):
    return sorted(d.index for d in program.dispatches if d.legal)


def _compiled(model: onnx.ModelProto, folder: Path, name: str) -> Workspace:
    model.ir_version = 10
    onnx.save(model, str(folder / f"{name}.onnx"))
    ws = compile_model(folder / f"{name}.onnx", folder / name)
    run_for_workspace(ws)
    return ws


@pytest.fixture(scope="module")
def example_ws(example_workspace, tmp_path_factory):
    dest = tmp_path_factory.mktemp("standalone") / "ws"
    shutil.copytree(example_workspace.root, dest)
    ws = Workspace.open(dest)
    run_for_workspace(ws)
    return ws


def test_example_runs_standalone_and_matches_onnxruntime(example_ws, cc):
    report = run_npu(example_ws, seed=3, mode="standalone")
    (ort,) = run_onnxruntime(example_ws.source_path, report.inputs)
    assert _close(report.outputs[0], ort)
    assert report.ok, "\n".join(report.summary_lines())
    (call,) = report.calls
    assert report.plugin_calls == 1 and call.index == 0 and call.computed_by == "npu-plugin-c"
    assert call.tiles == len(load_program(report.variant.exec_path).of(0).tile_offsets) > 1
    assert call.max_error <= 1e-4 * call.scale  # IREE's CPU dispatch on the operands the plugin saw
    assert "standalone: iree-run-module" in "\n".join(report.summary_lines())


def test_corrupted_tile_in_the_c_interpreter_is_caught_with_its_dispatch(example_ws, cc):
    report = run_npu(example_ws, seed=3, mode="standalone", fault=TileFault(dispatch=0, tile=5, delta=0.5))
    assert not report.ok and not report.vs_onnxruntime.ok and not report.vs_cpu.ok
    assert report.first_divergent is not None and report.first_divergent.index == 0
    assert report.first_divergent.max_error == pytest.approx(0.5, rel=1e-3)
    assert "first divergent dispatch: #0" in "\n".join(report.summary_lines())


def test_attention_block_standalone_agrees_with_onnxruntime_and_the_in_process_model(tmp_path, cc):
    ws = _compiled(attention(), tmp_path, "attn")
    program = run_for_workspace(ws)
    report = run_npu(ws, seed=2, mode="standalone")
    ort = run_onnxruntime(ws.source_path, report.inputs)
    assert _close(report.outputs[0], ort[0])
    assert report.ok, "\n".join(report.summary_lines())
    npu = sorted(d for r in report.variant.imports for d in r.dispatches)
    assert npu == _npu_sites(program) and not report.variant.cpu
    assert report.plugin_calls == len(report.calls) == len(program.dispatches)
    assert all(c.max_error <= 1e-4 * max(1.0, c.scale) for c in report.calls)
    # the Python functional model behind the plugin computes the same thing
    inproc = run_npu(ws, report.inputs, compare_dispatches=False, cpu_build=False, onnxruntime=False)
    assert _close(inproc.outputs[0], report.outputs[0], 1e-6)


def test_mlp_with_softmax_standalone(tmp_path, cc):
    ws = compile_model(models.mlp_softmax(tmp_path / "mlp.onnx"), tmp_path / "ws")
    program = run_for_workspace(ws)
    report = run_npu(ws, seed=6, mode="standalone")
    (ort,) = run_onnxruntime(ws.source_path, report.inputs)
    assert _close(report.outputs[0], ort)
    assert report.ok and report.plugin_calls == len(_npu_sites(program)), "\n".join(report.summary_lines())


def test_f16_matmul_standalone_within_f16_tolerance(tmp_path, cc):
    ws = compile_model(models.matmul_f16(tmp_path / "mm.onnx"), tmp_path / "ws")
    run_for_workspace(ws)
    report = run_npu(ws, seed=4, mode="standalone")
    (ort,) = run_onnxruntime(ws.source_path, report.inputs)
    assert report.outputs[0].dtype == np.float16 and _close(report.outputs[0], ort, 1e-2)
    assert report.ok and report.plugin_calls == 1, "\n".join(report.summary_lines())


def test_i8_matmul_standalone_accumulates_exactly_in_i32(tmp_path, cc):
    ws = _compiled(i8_matmul(), tmp_path, "mmi")
    report = run_npu(ws, seed=5, mode="standalone")
    (ort,) = run_onnxruntime(ws.source_path, report.inputs)
    assert report.outputs[0].dtype == np.int32
    np.testing.assert_array_equal(report.outputs[0], ort)
    assert report.ok and report.plugin_calls == 1, "\n".join(report.summary_lines())


def test_mixed_model_standalone_runs_npu_and_cpu_dispatches(tmp_path, cc):
    from npu_studio.core.compile.params import ParamOptions
    from tests.core.npu.hal.test_npu_run import _sin_matmul_softmax

    ws = compile_model(_sin_matmul_softmax(tmp_path / "mixed.onnx"), tmp_path / "ws",
                       params=ParamOptions(threshold_bytes=4096))  # the weight read from the archive
    run_for_workspace(ws)
    report = run_npu(ws, seed=1, mode="standalone")
    (ort,) = run_onnxruntime(ws.source_path, report.inputs)
    assert _close(report.outputs[0], ort)
    assert report.ok, "\n".join(report.summary_lines())
    assert [r["dispatch"] for r in report.variant.cpu] == [0] and report.plugin_calls == 2


def test_per_channel_requantized_conv_is_bit_exact_standalone(tmp_path, cc):
    ws = _compiled(quantized(conv_relu_model()), tmp_path, "qconv")
    program = run_for_workspace(ws)
    assert any("requantize per-channel" in d.epilogue for d in program.dispatches)
    report = run_npu(ws, seed=4, mode="standalone")
    (ort,) = run_onnxruntime(ws.source_path, report.inputs)
    np.testing.assert_array_equal(report.outputs[0], ort)
    assert report.ok and all(c.max_error == 0.0 for c in report.calls), "\n".join(report.summary_lines())


def test_requantized_int8_conv_is_bit_exact_standalone(tmp_path, cc):
    ws = _compiled(tie_model(), tmp_path, "ties")
    report = run_npu(ws, [TIE_X], mode="standalone")
    assert report.outputs[0].dtype == np.int8
    np.testing.assert_array_equal(report.outputs[0], HAND_Y)  # worked out by hand
    np.testing.assert_array_equal(report.outputs[0], run_onnxruntime(ws.source_path, [TIE_X])[0])
    assert report.ok and all(c.max_error == 0.0 for c in report.calls), "\n".join(report.summary_lines())


@pytest.fixture(scope="module")
def decoder_ws(tmp_path_factory):
    return _compiled(decoder_model("linear"), tmp_path_factory.mktemp("decoder"), "dec")


def test_resize_and_conv_transpose_run_standalone(decoder_ws, cc):
    ws = decoder_ws  # Resize: a gather inside a linalg body
    program = run_for_workspace(ws)
    report = run_npu(ws, seed=7, mode="standalone")
    (ort,) = run_onnxruntime(ws.source_path, report.inputs)
    assert _close(report.outputs[0], ort)
    assert report.ok and report.plugin_calls == len(_npu_sites(program)), "\n".join(report.summary_lines())


def test_unsupported_construct_is_one_line_naming_the_dispatch(decoder_ws, tmp_path, capsys, cc, monkeypatch):
    from npu_studio.core.npu.hal import exec_lower

    # an interpreter without math.floor, which the decoder's Resize (dispatch #2) uses
    monkeypatch.setattr(exec_lower, "BODY_OPS", exec_lower.BODY_OPS - {"math.floor"})
    shutil.copytree(decoder_ws.root, tmp_path / "dec", ignore=shutil.ignore_patterns("hal"))  # no variant yet
    ws = Workspace.open(tmp_path / "dec")
    with pytest.raises(StudioError) as info:
        run_npu(ws, mode="standalone")
    assert "dispatch #2" in str(info.value) and "math.floor in the body of linalg.generic" in str(info.value)
    assert main(["run", str(ws.root), "--npu", "--standalone"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "dispatch #2" in err and "cannot run it" in err


def test_non_linear_indexing_map_is_described_as_unsupported():
    from iree.compiler import ir

    from npu_studio.core.ir.flow_graph import FlowGraph
    from npu_studio.core.npu.hal.exec_lower import describe
    from npu_studio.core.npu.plan.passes import run_npu_pipeline

    text = (Path(__file__).parent / "data" / "floordiv_map.flow.mlir").read_text(encoding="utf-8")
    program = run_npu_pipeline(text)
    ctx = ir.Context()
    ctx.enable_multithreading(False)
    ctx.allow_unregistered_dialects = True
    with ctx:
        graph = FlowGraph(ir.Module.parse(text).operation)
        d = describe(graph.func_of(graph.sites[0]), program, 0)
    assert d.reason == "linalg.generic with a non-linear indexing map (d0, d1) -> (d0, d1 floordiv 2)"
    assert not d.ops  # described by its reason alone: the C interpreter never sees it


def _iree_run(variant, tmp_path) -> list[str]:
    x = tmp_path / "x.npy"
    np.save(x, np.zeros((1, 3, 500, 500), np.float32))
    return [str(toolchain.runtime_tool("iree-run-module")), "--device=local-task", f"--module={variant.vmfb}",
            "--function=SingleConv", f"--executable_plugin={plugin_path()}", f"--input=@{x}", "--output=@/dev/null"]


def test_a_broken_binary_fails_the_dispatch_with_one_line(example_ws, tmp_path, cc):
    """The C reader, on its own: a file it cannot read names the file and the byte offset, never crashes."""
    variant = build_variant(example_ws)
    data = variant.exec_path.read_bytes()
    cmd = _iree_run(variant, tmp_path)
    for name, content, message in (("cut.npub", data[:len(data) // 2], f"offset {len(data) // 2}: truncated"),
                                   ("short.npub", data[:10], "offset 10: truncated"),
                                   ("flip.npub", data[:40] + bytes([data[40] ^ 4]) + data[41:], "offset 24: corrupted"),
                                   ("magic.npub", b"NPUB" + data[4:], "offset 0: not an NPU program binary")):
        bad = tmp_path / name
        bad.write_bytes(content)
        proc = processes.run_child(cmd, timeout=300, env={ENV_PATH: str(bad)})
        ours = [ln for ln in proc.stderr.splitlines() if ln.startswith("npu plugin:")]
        assert 0 < proc.returncode < 128 and len(ours) == 1, (name, proc.returncode, proc.stderr[-500:])
        assert f"dispatch #0: {bad}: {message}" in ours[0], ours


def _mutations(path: Path):
    """(what, mutated binary): each names what the C interpreter must refuse without crashing."""
    import copy

    from tests.core.npu.hal.exec_mutations import description, rebuild

    d = description(path)
    disp = d["dispatches"][0]
    root = disp["root"]
    load = next(k for k, op in enumerate(disp["ops"]) if op["op"] == "load")

    def mutate(fn):
        m = copy.deepcopy({k: v for k, v in d.items() if k != "data"})
        fn(m["dispatches"][0])
        return rebuild(m)
    yield "offsets: the slice reaches outside", mutate(
        lambda x: x["ops"][load].update(offsets=[10 ** 6] * len(x["ops"][load]["offsets"])))
    yield "maps: an indexing map reaches outside", mutate(lambda x: x["ops"][root]["maps"][0][0].__setitem__(-1, 10 ** 6))
    yield ".task: 5 loops, the dispatch's first task 6", mutate(
        lambda x: (x["tile_sizes"][-1].pop(), x["tile_offsets"][-1].pop()))
    yield "tile_sizes: a tile reaches outside", mutate(
        lambda x: x["tile_sizes"].__setitem__(0, [10 ** 6] * len(x["tile_sizes"][0])))
    yield "body op args: 99 outside", mutate(lambda x: x["ops"][root]["body"][0].update(args=[99, 0]))
    yield "unknown body op", mutate(lambda x: x["ops"][root]["body"][0].update(op="arith.teleport"))
    # an instruction's address outside every buffer: the first load reads past its DRAM tensor
    cut = copy.deepcopy(d)
    k = next(i for i, ins in enumerate(cut["instructions"]) if ins.op == "dma.load")
    ins = cut["instructions"][k]
    cut["instructions"][k] = dataclasses.replace(ins, args=(ins.args[0], ins.args[1] + 2 ** 30, *ins.args[2:]))
    yield "dma.load: 0x", rebuild(cut)


def test_the_c_interpreter_refuses_bad_binaries_without_crashing(example_ws, tmp_path, cc):
    variant = build_variant(example_ws)
    cmd = _iree_run(variant, tmp_path)
    for k, (what, data) in enumerate(_mutations(variant.exec_path)):
        path = tmp_path / f"bad{k}.npub"
        path.write_bytes(data)
        proc = processes.run_child(cmd, timeout=300, env={ENV_PATH: str(path)})
        ours = [ln for ln in proc.stderr.splitlines() if ln.startswith("npu plugin:")]
        assert 0 < proc.returncode < 128, (what, proc.returncode)  # failed the dispatch; no signal
        assert len(ours) == 1 and what in ours[0] and f"{path}: offset " in ours[0], (what, ours)


def test_binary_reader_bounds_ids(example_ws, tmp_path, cc):
    from tests.core.npu.hal.exec_mutations import description, rebuild

    variant = build_variant(example_ws)
    d = description(variant.exec_path)
    d["dispatches"][0]["ops"][0]["results"] = [10 ** 6]
    bad = tmp_path / "npu_program.npub"
    bad.write_bytes(rebuild(d))
    with pytest.raises(BadFile, match=r"offset \d+: dispatch #0: ops\[0\]: a value id outside"):
        load_program(bad)


def test_missing_c_compiler_standalone_is_one_line_and_exit_2(example_workspace, tmp_path, capsys, monkeypatch):
    ws_dir = tmp_path / "ws"
    shutil.copytree(example_workspace.root, ws_dir)
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.delenv("CC", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert main(["run", str(ws_dir), "--npu", "--standalone"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no C compiler to build the NPU plugin" in err


def test_benchmark_times_the_standalone_variant(example_ws, cc):
    from npu_studio.core.npu.hal.call_log import CallLimits
    from npu_studio.core.npu.program.npu_ir import NpuProgram
    from npu_studio.core.npu.store.workspace_io import json_path
    from npu_studio.core.run.runner import pick_function, random_inputs

    variant = build_variant(example_ws)
    sig = pick_function(example_ws.snapshot_path("input"))
    inputs = random_inputs(sig, 0)
    limits = CallLimits(NpuProgram.load(json_path(example_ws)))
    seconds = standalone.benchmark(variant.vmfb, sig.name, inputs, variant=variant, plugin=plugin_path(),
                                   limits=limits, repetitions=1)
    assert seconds > 0


@pytest.mark.slow
def test_resnet50_standalone_every_npu_dispatch_through_the_c_interpreter(tmp_path, cc):
    from tests.zoo_cache import zoo_workspace

    shutil.copytree(zoo_workspace("resnet50").root, tmp_path / "ws")
    ws = Workspace.open(tmp_path / "ws")
    program = run_for_workspace(ws)
    report = run_npu(ws, seed=0, onnxruntime=False, mode="standalone")
    (ort,) = run_onnxruntime(ws.source_path, report.inputs)
    assert _close(report.outputs[0], ort)
    assert report.ok, "\n".join(report.summary_lines())
    assert sorted(d for r in report.variant.imports for d in r.dispatches) == _npu_sites(program)
    assert not report.variant.cpu and report.plugin_calls == len(report.calls) == len(program.dispatches)
    assert all(c.max_error <= 1e-4 * max(1.0, c.scale) for c in report.calls)
    assert max(c.scale for c in report.calls) > 1e6



@pytest.mark.corpus  # over two minutes on the 2-core CI machine: `make fuzz-models` runs it
def test_qdq_resnet50_standalone_is_irees_cpu_result_bit_for_bit(tmp_path, cc):
    """The QDQ zoo model through the program binary: where `simulate --check` is bit-identical to IREE
    (int8), so is the plugin's C interpreter, call by call and on the model's output."""
    from npu_studio.core.run.runner import pick_function, run_vmfb
    from tests.zoo_cache import quant_zoo_workspace

    shutil.copytree(quant_zoo_workspace("resnet50", "i8").root, tmp_path / "ws")
    ws = Workspace.open(tmp_path / "ws")
    program = run_for_workspace(ws)
    report = run_npu(ws, seed=0, onnxruntime=False, mode="standalone")
    assert report.ok, "\n".join(report.summary_lines())
    assert report.plugin_calls == len(report.calls) == len(_npu_sites(program)) > 50
    cpu = run_vmfb(ws.vmfb_path, pick_function(ws.snapshot_path("input")).name, report.inputs,
                   parameters=ws.params_path)  # IREE's own CPU build, run here
    for ours, iree in zip(report.outputs, cpu, strict=True):
        np.testing.assert_array_equal(ours, iree)
    quantized = [c for c in report.calls if c.dtype in ("int8", "uint8", "int32")]
    assert quantized and all(c.max_error == 0.0 for c in quantized), \
        [(c.index, c.max_error) for c in quantized if c.max_error]
    assert all(c.max_error <= 1e-5 * max(1.0, c.scale) for c in report.calls)
