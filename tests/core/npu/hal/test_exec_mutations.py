"""The plugin's C interpreter under AddressSanitizer and UndefinedBehaviorSanitizer on mutated binaries.

A real program binary, npu_program.npub (the attention block, compiled here
through the project), is mutated in every way issue 36 found harmful (its
compute sections and tiles edited and written back with a valid CRC), and
at random, byte by byte (exec_mutations). Each description is run by the plugin built with
`-fsanitize=address,undefined` (plugin_build's sanitize option) through
exec_harness.c, which calls the plugin's import as IREE's runtime does, on
bindings allocated at exactly the sizes the variant's executables pass: the
sanitizers are the independent truth for "nothing outside its buffers".
Every run must end in "OK" or in one line naming the binary, never a
signal or a sanitizer report, and never "OK" for a binary that
reaches outside IREE's buffers. Through `run --npu --standalone` a bad
binary is one line and a non-zero exit; the unmutated one gives
IREE's own results. NPU_STUDIO_FUZZ_PROFILE=fuzz (`make fuzz`) runs
thousands of random mutations instead of dozens.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import subprocess
from pathlib import Path

import onnx
import pytest

from npu_studio.cli import main
from npu_studio.core.npu.hal import plugin_build
from npu_studio.core.npu.hal.exec_desc import ENV_PATH
from npu_studio.core.npu.hal.variant import VARIANT_JSON, FOLDER, build_variant
from npu_studio.core.npu.store.workspace_io import run_for_workspace
from npu_studio.core.workspace.workspace import Workspace, compile_model
from tests.core.npu.hal.exec_mutations import CLASSES, apply, description, random_mutation
from tests.core.npu.npu_models import attention

HERE = Path(__file__).parent
FUZZ = os.environ.get("NPU_STUDIO_FUZZ_PROFILE") == "fuzz"
RANDOM_CASES = 3000 if FUZZ else 40
SANITIZER_ENV = {"ASAN_OPTIONS": "exitcode=99:detect_leaks=1:abort_on_error=0",
                 "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1:exitcode=98"}


@pytest.fixture(scope="module")
def attention_ws(tmp_path_factory, cc) -> Workspace:
    folder = tmp_path_factory.mktemp("mutations")
    model = attention()
    model.ir_version = 10
    onnx.save(model, str(folder / "attn.onnx"))
    ws = compile_model(folder / "attn.onnx", folder / "ws")
    run_for_workspace(ws)
    build_variant(ws)
    return ws


@pytest.fixture(scope="module")
def harness(attention_ws, tmp_path_factory, cc):
    """(run, description): run(path) -> (exit code, stdout, stderr) of the sanitized plugin on the binary `path`."""
    folder = tmp_path_factory.mktemp("harness")
    plugin = plugin_build.plugin_path(sanitize=True)
    exe = folder / "exec_harness"
    subprocess.run([cc, *plugin_build.SANITIZE_FLAGS, "-I", str(plugin_build.SOURCE_DIR), "-o", str(exe),
                    str(HERE / "exec_harness.c"), "-ldl"], check=True, capture_output=True, timeout=300)
    variant = build_variant(attention_ws)
    calls = [f"{r.dispatch}:" + ",".join(str(b.nbytes) for b in r.bindings) for r in variant.imports]

    def run(path: Path):
        env = {**os.environ, **SANITIZER_ENV, ENV_PATH: str(path)}
        proc = subprocess.run([str(exe), str(plugin), *calls], capture_output=True, text=True, env=env, timeout=60)
        return proc.returncode, proc.stdout, proc.stderr

    return run, description(variant.exec_path)


def _check(run, path: Path, outside: bool, what: str) -> str:
    """One run: OK or one line naming `path`; never a crash or a sanitizer report."""
    rc, out, err = run(path)
    assert "Sanitizer" not in err and "runtime error" not in err, (what, err[-3000:])
    assert rc in (0, 1), (what, rc, err[-2000:])
    if rc == 0:
        assert out.strip() == "OK" and not err.strip(), (what, out, err)
        assert not outside, f"{what}: OK on a binary that reaches outside IREE's buffers"
        return "OK"
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("npu plugin:") and str(path) in lines[0], (what, err)
    return lines[0]


def _write(folder: Path, k: int, data: bytes) -> Path:
    path = folder / f"case{k}" / "npu_program.npub"
    path.parent.mkdir()
    path.write_bytes(data)
    return path


def test_unmutated_binary_runs_clean_under_the_sanitizers(harness, tmp_path):
    run, desc = harness
    assert _check(run, _write(tmp_path, 0, desc["data"]), False, "unmutated") == "OK"


@pytest.mark.parametrize("name,dispatch,mutation,outside", CLASSES, ids=[c[0] for c in CLASSES])
def test_each_class_of_bad_binary_ends_in_one_line(harness, tmp_path, name, dispatch, mutation, outside):
    run, desc = harness
    line = _check(run, _write(tmp_path, 0, apply(desc, dispatch, mutation)), outside, name)
    if outside:
        assert "npu_program.npub" in line


def test_random_mutations_never_crash_or_reach_outside(harness, tmp_path):
    run, desc = harness
    rng = random.Random(int.from_bytes(os.urandom(4), "little") if FUZZ else 36)
    outcomes = {"OK": 0, "refused": 0}
    for k in range(RANDOM_CASES):
        mutated = random_mutation(desc, rng, edits=rng.choice((1, 1, 2, 3)))
        result = _check(run, _write(tmp_path, k, mutated), False, f"random case {k}")
        outcomes["OK" if result == "OK" else "refused"] += 1
        if k % 200 == 199:
            shutil.rmtree(tmp_path, ignore_errors=True)
            tmp_path.mkdir()
    assert outcomes["refused"] > RANDOM_CASES // 4, outcomes  # the mutations do reach the checks
    print(f"{RANDOM_CASES} random mutations: {outcomes}")


def _record_hash(ws: Workspace) -> None:
    """What a crafted workspace does: variant.json records the hash of its npu_program.npub."""
    path = ws.root / FOLDER / VARIANT_JSON
    record = json.loads(path.read_text(encoding="utf-8"))
    record["npu_exec_sha256"] = hashlib.sha256((ws.root / FOLDER / "npu_program.npub").read_bytes()).hexdigest()
    path.write_text(json.dumps(record), encoding="utf-8")


@pytest.mark.parametrize("name", ["binding count of one", "reshape of i8 to f32", "truncated binary",
                                  "input binding larger than IREE's buffer", "store past the output buffer"])
def test_bad_binary_reaches_the_cli_as_one_line(attention_ws, tmp_path, capsys, name):
    ws_dir = tmp_path / "ws"
    shutil.copytree(attention_ws.root, ws_dir)
    exec_path = ws_dir / FOLDER / "npu_program.npub"
    _, dispatch, mutation, _ = next(c for c in CLASSES if c[0] == name)
    exec_path.write_bytes(apply(description(exec_path), dispatch, mutation))
    _record_hash(Workspace.open(ws_dir))
    code = main(["run", str(ws_dir), "--npu", "--standalone"])
    err = capsys.readouterr().err
    assert code in (1, 2) and err.count("\n") == 1 and "npu_program.npub" in err, (code, err)
    assert "Traceback" not in err
    if name == "truncated binary":  # read by Python first: a bad file, exit 2
        assert code == 2 and "offset" in err and "truncated" in err, err


def test_unmutated_binary_gives_irees_results(attention_ws, tmp_path, capsys):
    ws_dir = tmp_path / "ws"
    shutil.copytree(attention_ws.root, ws_dir)
    code = main(["run", str(ws_dir), "--npu", "--standalone"])
    out = capsys.readouterr().out
    # exit 0: the outputs equal IREE's CPU build's and every plugin call IREE's CPU dispatch on its operands
    assert code == 0 and "iree-cpu" in out and "first divergent" not in out, out


def test_reuse_key_covers_the_binary(attention_ws, tmp_path):
    ws_dir = tmp_path / "ws"
    shutil.copytree(attention_ws.root, ws_dir)
    exec_path = ws_dir / FOLDER / "npu_program.npub"
    good = exec_path.read_bytes()
    assert build_variant(Workspace.open(ws_dir)).reused
    exec_path.write_bytes(apply(description(exec_path), *CLASSES[0][1:3]))
    again = build_variant(Workspace.open(ws_dir))
    assert not again.reused and exec_path.read_bytes() == good  # rebuilt: the edited binary is replaced
