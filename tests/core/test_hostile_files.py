"""Hostile model files: external data that points anywhere, huge files that are not ONNX, odd names.

Every case runs the CLI in-process and checks one line on stderr naming the
model (and the tensor, for external data), exit code 2, and that the
workspace folder it was pointed at is not even created. External data cases
also record, through a Python audit hook, every file the process opens:
nothing outside the model's folder may be among them.
"""

from __future__ import annotations

import os
import random
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from npu_studio.cli import main

# Paths opened (by Python code: ours and onnx's loader) while `_watching` is set.
_opened: list[str] = []
_watching = False


def _audit(event: str, args) -> None:
    if _watching and event in ("open", "os.open") and args and isinstance(args[0], (str, bytes, os.PathLike)):
        _opened.append(os.fsdecode(args[0]))


sys.addaudithook(_audit)


def add_model(folder: Path, n: int, seed: int, name: str = "m.onnx") -> tuple[Path, np.ndarray]:
    """y = x + W with W (float32[n], random) as an initializer stored inline."""
    weights = np.random.default_rng(seed).standard_normal(n).astype(np.float32)
    graph = helper.make_graph([helper.make_node("Add", ["x", "W"], ["y"], name="add")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [n])],
                              initializer=[numpy_helper.from_array(weights, "W")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 10
    folder.mkdir(parents=True, exist_ok=True)
    onnx.save(model, folder / name)
    return folder / name, weights


def point_external(model_path: Path, location: str, *, length: int | None = None) -> None:
    """Rewrite W of the model as external data at `location` (offset 0)."""
    model = onnx.load(model_path)
    (tensor,) = model.graph.initializer
    tensor.ClearField("raw_data")
    tensor.ClearField("float_data")
    tensor.data_location = TensorProto.EXTERNAL
    del tensor.external_data[:]
    entries = [("location", location)] + ([("length", str(length))] if length is not None else [])
    for key, value in entries:
        entry = tensor.external_data.add()
        entry.key, entry.value = key, value
    onnx.save(model, model_path)


def outside_parent(tmp: Path, weights: np.ndarray) -> tuple[Path, Path]:
    outside = tmp / "secret.bin"
    outside.write_bytes(weights.tobytes())
    model, _ = add_model(tmp / "models" / "here", weights.size, 1)
    point_external(model, "../../secret.bin")
    return model, outside


def outside_through_subfolder(tmp: Path, weights: np.ndarray) -> tuple[Path, Path]:
    outside = tmp / "other" / "w.bin"
    outside.parent.mkdir()
    outside.write_bytes(weights.tobytes())
    model, _ = add_model(tmp / "models", weights.size, 2)
    (tmp / "models" / "sub").mkdir()
    point_external(model, "sub/../../other/w.bin")
    return model, outside


def absolute_outside(tmp: Path, weights: np.ndarray) -> tuple[Path, Path]:
    outside = tmp / "abs.bin"
    outside.write_bytes(weights.tobytes())
    model, _ = add_model(tmp / "models", weights.size, 3)
    point_external(model, str(outside))
    return model, outside


def absolute_inside(tmp: Path, weights: np.ndarray) -> tuple[Path, Path]:
    """Even an absolute path to the model's own folder is refused: locations are relative."""
    model, _ = add_model(tmp / "models", weights.size, 4)
    inside = tmp / "models" / "w.bin"
    inside.write_bytes(weights.tobytes())
    point_external(model, str(inside))
    return model, tmp / "never-looked-at"


def symlinked_file(tmp: Path, weights: np.ndarray) -> tuple[Path, Path]:
    outside = tmp / "elsewhere.bin"
    outside.write_bytes(weights.tobytes())
    model, _ = add_model(tmp / "models", weights.size, 5)
    (tmp / "models" / "w.bin").symlink_to(outside)
    point_external(model, "w.bin")
    return model, outside


def symlinked_folder(tmp: Path, weights: np.ndarray) -> tuple[Path, Path]:
    outside = tmp / "data" / "w.bin"
    outside.parent.mkdir()
    outside.write_bytes(weights.tobytes())
    model, _ = add_model(tmp / "models", weights.size, 6)
    (tmp / "models" / "weights").symlink_to(tmp / "data")
    point_external(model, "weights/w.bin")
    return model, outside


def missing_file(tmp: Path, weights: np.ndarray) -> tuple[Path, Path]:
    model, _ = add_model(tmp / "models", weights.size, 7)
    point_external(model, "w.bin")
    return model, tmp / "never-looked-at"


def missing_in_subfolder(tmp: Path, weights: np.ndarray) -> tuple[Path, Path]:
    model, _ = add_model(tmp / "models", weights.size, 8)
    point_external(model, "no/such/folder/w.bin")
    return model, tmp / "never-looked-at"


def short_file(tmp: Path, weights: np.ndarray) -> tuple[Path, Path]:
    model, _ = add_model(tmp / "models", weights.size, 9)
    (tmp / "models" / "w.bin").write_bytes(weights.tobytes()[: weights.nbytes // 2])
    point_external(model, "w.bin")
    return model, tmp / "never-looked-at"


def short_of_declared_length(tmp: Path, weights: np.ndarray) -> tuple[Path, Path]:
    model, _ = add_model(tmp / "models", weights.size, 10)
    (tmp / "models" / "w.bin").write_bytes(weights.tobytes()[:-1])
    point_external(model, "w.bin", length=weights.nbytes)
    return model, tmp / "never-looked-at"


EXTERNAL_CASES = {
    "outside-parent": (outside_parent, "outside"),
    "outside-through-subfolder": (outside_through_subfolder, "outside"),
    "absolute-outside": (absolute_outside, "absolute"),
    "absolute-inside": (absolute_inside, "absolute"),
    "symlinked-file": (symlinked_file, "outside"),
    "symlinked-folder": (symlinked_folder, "outside"),
    "missing": (missing_file, "missing"),
    "missing-in-subfolder": (missing_in_subfolder, "missing"),
    "short": (short_file, "bytes from offset"),
    "short-of-declared-length": (short_of_declared_length, "bytes from offset"),
}


def run_cli(argv) -> tuple[int, str]:
    import contextlib
    import io

    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main([os.fsdecode(a) if isinstance(a, bytes) else str(a) for a in argv])
    return code, err.getvalue()


@pytest.mark.parametrize("inline", [False, True], ids=["archive", "inline-weights"])
@pytest.mark.parametrize("case", list(EXTERNAL_CASES))
def test_external_data_problems_are_one_line_naming_model_and_tensor(case, inline, tmp_path):
    global _watching
    make, reason = EXTERNAL_CASES[case]
    # the weights are large enough for the archive path to move them (64 KiB threshold)
    weights = np.random.default_rng(len(case)).standard_normal(20_000).astype(np.float32)
    model, outside = make(tmp_path, weights)
    ws = tmp_path / "ws"
    _opened.clear()
    _watching = True
    try:
        code, err = run_cli(["compile", model, "--workspace", ws, *(["--inline-weights"] if inline else [])])
    finally:
        _watching = False
    assert code == 2, err
    (line,) = err.splitlines()
    assert str(model) in line and "'W'" in line and reason in line, line
    assert "Traceback" not in err
    assert not ws.exists()
    folder = model.parent.resolve()
    strays = [p for p in _opened if not Path(p).resolve().is_relative_to(folder)
              and Path(p).resolve().is_relative_to(tmp_path.resolve())]
    assert strays == [], f"opened outside the model's folder: {strays}"
    assert outside.resolve() not in {Path(p).resolve() for p in _opened}


@pytest.mark.parametrize("inline", [False, True], ids=["archive", "inline-weights"])
def test_external_data_inside_the_folder_still_works(inline, tmp_path):
    """The checks refuse only what they should: good external data compiles and runs to x + W."""
    weights = np.random.default_rng(11).standard_normal(20_000).astype(np.float32)
    model, _ = add_model(tmp_path / "models", weights.size, 12)
    (tmp_path / "models" / "data").mkdir()
    (tmp_path / "models" / "data" / "w.bin").write_bytes(weights.tobytes())
    point_external(model, "data/w.bin", length=weights.nbytes)
    ws = tmp_path / "ws"
    code, err = run_cli(["compile", model, "--workspace", ws, *(["--inline-weights"] if inline else [])])
    assert code == 0, err
    x = np.random.default_rng(13).standard_normal(weights.size).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    code, err = run_cli(["run", ws, "--input", tmp_path / "x.npy", "--output-dir", tmp_path / "out"])
    assert code == 0, err
    np.testing.assert_allclose(np.load(tmp_path / "out" / "output0.npy"), x + weights, rtol=1e-6)


# -- files that are not ONNX, however big -------------------------------------------------------


def sparse_zeros(path: Path, size: int) -> Path:
    with open(path, "wb") as f:
        f.truncate(size)
    return path


def noise_then_sparse(path: Path, size: int) -> Path:
    with open(path, "wb") as f:
        f.write(random.Random(size).randbytes(4096))
        f.truncate(size)
    return path


def repeated_singular_field(path: Path, size: int) -> Path:
    """Valid protobuf (field 1, ir_version, over and over) that no ONNX writer makes: 64 MiB of it."""
    path.write_bytes(b"\x08\x07" * (32 << 20))
    return path


def endless_varint(path: Path, size: int) -> Path:
    """A first varint that never ends (0xff bytes), then holes."""
    with open(path, "wb") as f:
        f.write(b"\xff" * 1_000_000)
        f.truncate(size)
    return path


@pytest.mark.parametrize("make", [sparse_zeros, noise_then_sparse, repeated_singular_field, endless_varint],
                         ids=lambda f: f.__name__)
def test_a_huge_file_that_is_not_onnx_is_refused(make, tmp_path):
    """3 GiB (sparse: no disk used) named .onnx; refused from its first records, before any workspace exists.
    How long that takes is measured by benchmarks/refuse_large_file.py, not here."""
    model = make(tmp_path / "huge.onnx", 3 << 30)
    ws = tmp_path / "ws"
    code, err = run_cli(["compile", model, "--workspace", ws])
    assert code == 2, err
    (line,) = err.splitlines()
    assert str(model) in line and "not a valid ONNX protobuf" in line
    assert not ws.exists()


# -- file names ---------------------------------------------------------------------------------


def odd_names(seed: int) -> list[bytes]:
    """Two file names: one with bytes that are not UTF-8, one with a newline and a control character."""
    rng = random.Random(seed)
    undecodable = bytes(rng.randrange(0x80, 0xC0) for _ in range(3))  # continuation bytes: never valid alone
    control = bytes([rng.choice([1, 7, 27, 127])])
    return [b"m" + undecodable + b".onnx", b"a\nb" + control + b"c.onnx"]


def expected_shown(name: bytes) -> str:
    """How a name must appear in the one line: undecodable bytes as \\udcXX, control characters escaped."""
    out = ""
    for ch in os.fsdecode(name):
        if 0xDC80 <= ord(ch) <= 0xDCFF:
            out += f"\\udc{ord(ch) - 0xDC00:02x}"
        elif ord(ch) < 32 or ord(ch) == 127:
            out += {"\n": "\\n", "\t": "\\t", "\r": "\\r"}.get(ch, f"\\x{ord(ch):02x}")
        else:
            out += ch
    return out


@pytest.mark.parametrize("seed", [1, 2])
def test_odd_file_names_stay_on_one_line_escaped(seed, tmp_path, capsys):
    for name in odd_names(seed):
        bad = Path(os.fsdecode(bytes(tmp_path) + b"/" + name))
        bad.write_bytes(b"\x12\x34 not a model")
        code, err = run_cli(["compile", bad, "--workspace", tmp_path / "ws"])
        assert code == 2, err
        (line,) = err.splitlines()
        assert expected_shown(bytes(tmp_path) + b"/" + name) in line, line
        assert not (tmp_path / "ws").exists()


def test_a_good_model_with_an_odd_name_compiles_into_its_default_workspace(tmp_path, capsys):
    for name in odd_names(3):
        model, weights = add_model(tmp_path, 8, 14, name=os.fsdecode(name))
        assert main(["compile", str(model), "--inline-weights"]) == 0, capsys.readouterr().err
        out = capsys.readouterr().out
        assert all(line.isprintable() for line in out.splitlines())
        workspace = next(line.split(": ", 1)[1] for line in out.splitlines() if line.startswith("workspace: "))
        assert Path(workspace).name.isascii() and Path(workspace).is_dir()
