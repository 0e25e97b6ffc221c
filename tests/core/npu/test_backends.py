"""NPU backends (issue 38): the registry, the toy backend installed from tests/backends/toy_npu,
and what a missing or broken backend does.

Truths: the distributions' own versions (importlib.metadata); the toy's rules applied by hand
to each dispatch's dimensions; the toy's cost formula by hand on each task's tile sizes;
onnxruntime's outputs for simulate --check and run --npu.
"""

from __future__ import annotations

import ast
import json
import math
import shutil
from importlib import metadata
from pathlib import Path

import pytest

from npu_studio.cli import main
from npu_studio.core.npu.backend import registry
from npu_studio.core.npu.plan.passes import run_npu_pipeline
from npu_studio.core.npu.sim import simulate
from npu_studio.core.npu.target.target import TargetError, parse_target
from npu_studio.core.workspace.workspace import Workspace
from tests.zoo_cache import zoo_flow, zoo_workspace

REPO = Path(__file__).resolve().parents[3]
TOY_MAX_CHANNELS = 64  # tests/backends/toy_npu/toy_npu/toy.toml
TOY_CYCLES_PER_MAC, TOY_ARRAY = 2, 16 * 16


@pytest.fixture(scope="module")
def toy():
    return registry.load("toy")


@pytest.fixture(scope="module")
def toy_target(toy):
    return registry.load_target(toy)


def test_backends_lists_both_with_their_versions(capsys):
    assert main(["backends"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith(f"generic {metadata.version('npu-studio')} ")
    assert any(ln.startswith(f"toy {metadata.version('toy-npu')} ") for ln in lines)


def _toy_rejects(d) -> bool:
    """The toy's two rules, by hand, on a dispatch's kind and dimensions."""
    if d.kind == "depthwise_conv" or d.dims.get("G", 1) > 1:
        return True
    return d.kind == "conv" and any(d.dims.get(k, 0) > TOY_MAX_CHANNELS for k in ("C", "F"))


@pytest.mark.parametrize("name", ["example", pytest.param("resnet50", marks=pytest.mark.slow), "shufflenet"])
def test_toy_legality_differs_where_its_rules_say(name, toy_target, example_workspace):
    flow = example_workspace.snapshot_path("flow") if name == "example" else zoo_flow(name)
    generic = run_npu_pipeline(flow, registry.load_target(registry.load("generic")))
    ours = run_npu_pipeline(flow, toy_target)
    assert ours.target.backend == "toy"
    for g, t in zip(generic.dispatches, ours.dispatches, strict=True):
        want = g.legal and not _toy_rejects(g)
        assert t.legal == want, (name, g.index, g.kind, g.dims, t.reason)
        if g.legal and not t.legal:
            assert t.rule in ("toy-depthwise", "toy-channels"), t.reason
    differs = sum(g.legal != t.legal for g, t in zip(generic.dispatches, ours.dispatches))
    assert differs > 0 if name != "example" else differs == 0
    # its schedule runs, and the timing simulator charged each tile the toy's own cost
    result = simulate(ours, ours.target)
    assert result.total_cycles > 0
    infos = {d.index: d for d in ours.dispatches}
    mac = sum(16 + -(-math.prod(t.tile_sizes) * TOY_CYCLES_PER_MAC // TOY_ARRAY) for t in ours.tasks
              if t.tile_sizes and infos[t.dispatch].unit == "mac")
    assert result.engine_busy[result.engines.index("mac")] == mac


def test_toy_target_keys_are_checked_with_file_line_key(toy, tmp_path):
    text = registry.load("toy").default_target.read_text(encoding="utf-8")
    bad = text.replace("max_channels = 64", "max_channels = 0")
    line = bad.splitlines().index("max_channels = 0") + 1
    with pytest.raises(TargetError) as e:
        registry.parse_target_for(toy, bad, tmp_path / "t.toml")
    assert str(e.value).endswith(f"t.toml:{line}: toy.max_channels: expected an integer from 1 to 65,536, got 0")
    with pytest.raises(TargetError, match=r"toy\.speed: unknown key"):
        registry.parse_target_for(toy, text + "speed = 3\n", "t.toml")
    with pytest.raises(TargetError, match="toy: unknown table"):  # the generic NPU has no [toy]
        parse_target(text, "t.toml")


def test_toy_emits_tagged_instructions(toy, toy_target, example_workspace):
    program = run_npu_pipeline(example_workspace.snapshot_path("flow"), toy_target)
    emitted = toy.emit(program)
    text = emitted.assembly.splitlines()
    assert [(ln.dispatch, ln.task) for ln in emitted.lines] == [(t.dispatch, t.id) for t in program.tasks]
    for ln in emitted.lines:
        assert text[ln.line - 1].split()[1:3] == [f"d{ln.dispatch}", f"t{ln.task}"]
    assert sum(ln.size for ln in emitted.lines) + 8 == len(emitted.binary)


@pytest.fixture(scope="module")
def toy_shufflenet(tmp_path_factory):
    dest = tmp_path_factory.mktemp("toy") / "ws"
    shutil.copytree(zoo_workspace("shufflenet").root, dest)
    return Workspace.open(dest)


@pytest.mark.slow
def test_toy_simulate_check_matches_onnxruntime(toy_shufflenet, fresh_example, capsys):
    for ws in (fresh_example, toy_shufflenet):
        assert main(["simulate", str(ws.root), "--backend", "toy", "--check"]) == 0
        out = capsys.readouterr().out
        # shufflenet's output is flat on random inputs: there the per-dispatch comparison with
        # IREE's CPU build carries the check ("OK per dispatch; the outputs cannot tell")
        assert "on toy-npu" in out and "vs onnxruntime" in out and out.splitlines()[-1].startswith("OK"), out
        assert Workspace.open(ws.root).manifest.npu_backend == "toy"  # the workspace records it
        assert json.loads((ws.root / "npu" / "target.json").read_text())["backend"] == "toy"
        # later commands take the recorded backend
        assert main(["simulate", str(ws.root)]) == 0
        assert "on toy-npu" in capsys.readouterr().out


@pytest.mark.slow
def test_toy_run_npu_matches_onnxruntime(fresh_example, capsys):
    code = main(["run", str(fresh_example.root), "--npu", "--backend", "toy"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "onnxruntime" in out and "max error" in out


# -- a missing or broken backend: one line naming it, exit 2, nothing written -------------
@pytest.fixture
def broken(monkeypatch):
    extra = {n: metadata.EntryPoint(n, f"tests.backends.broken_backends:{fn}", registry.GROUP)
             for n, fn in (("broken", "raises_on_load"), ("weird", "not_a_backend"),
                           ("raising", "rule_raises"))}
    real = registry._entry_points
    monkeypatch.setattr(registry, "_entry_points", lambda: {**real(), **extra})
    registry.forget()
    yield
    registry.forget()


@pytest.mark.parametrize("name, says", [
    ("nope", "NPU backend 'nope': not installed (installed: generic, "),
    ("broken", "NPU backend 'broken': entry point tests.backends.broken_backends:raises_on_load failed: "
               "RuntimeError: the vendor SDK is not installed"),
    ("weird", "NPU backend 'weird': entry point tests.backends.broken_backends:not_a_backend returned dict, "
              "not a Backend"),
    ("raising", "NPU backend 'raising': rule 'boom' raised ZeroDivisionError: division by zero in the "
                "vendor's rule"),
])
def test_bad_backend_is_one_line_and_writes_nothing(name, says, broken, fresh_example, tmp_path, capsys):
    ws = fresh_example.root
    manifest = (ws / "manifest.json").read_bytes()
    npu_before = sorted((p.relative_to(ws), p.read_bytes() if p.is_file() else None)
                        for p in (ws / "npu").rglob("*"))  # another test may have planned the example already
    out_json = tmp_path / "out.json"
    spec = tmp_path / "sweep.toml"
    spec.write_text(f'models = ["{ws}"]\n[parameters]\n"sram.size_kib" = [256, 512]\n', encoding="utf-8")
    for argv in (["npu", str(ws), "--backend", name, "--json", str(out_json)],
                 ["simulate", str(ws), "--backend", name],
                 ["run", str(ws), "--npu", "--backend", name],
                 ["sweep", str(spec), "--backend", name, "--jobs", "1", "--out", str(tmp_path / "sweep")]):
        capsys.readouterr()
        assert main(argv) == 2, argv
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and says in err, (argv, err)
    assert not out_json.exists()
    # a backend that fails to load stops the sweep before its folder; one that raises in a hook,
    # at its first point (the folder claimed, no results in it)
    assert not (tmp_path / "sweep").exists() if name != "raising" else \
        not (tmp_path / "sweep" / "results.parquet").exists()
    assert sorted((p.relative_to(ws), p.read_bytes() if p.is_file() else None)
                  for p in (ws / "npu").rglob("*")) == npu_before
    assert (ws / "manifest.json").read_bytes() == manifest


def test_backends_command_names_a_broken_one(broken, capsys):
    assert main(["backends"]) == 2
    out = capsys.readouterr().out
    assert "broken  (cannot load: entry point tests.backends.broken_backends:raises_on_load failed" in out
    assert out.startswith("generic ")


# -- the seam: the pipeline reaches the generic NPU only through the registry ---------------
def test_no_module_imports_the_generic_backend_directly():
    generic = "npu_studio.core.npu.generic"
    offenders = []
    for path in (REPO / "npu_studio").rglob("*.py"):
        module = ".".join(path.relative_to(REPO).with_suffix("").parts)
        if module.startswith(generic):
            continue
        package = module.rsplit(".", 1)[0] if path.name != "__init__.py" else module.removesuffix(".__init__")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(parent + ([base] if base else []))
                names = [base] + [f"{base}.{a.name}" for a in node.names]
            if any(n == generic or n.startswith(generic + ".") for n in names):
                offenders.append(f"{module}:{node.lineno}")
    assert offenders == []
    pyproject = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    assert 'generic = "npu_studio.core.npu.generic.backend:make_backend"' in pyproject
    assert registry.load("generic").rules is not None
