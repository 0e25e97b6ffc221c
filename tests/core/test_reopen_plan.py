"""What opening a model with a workspace means (core/workspace/reopen.py), without Qt."""

from __future__ import annotations

import hashlib
import json
import shutil

from npu_studio.core.workspace.model_digest import model_digest
from npu_studio.core.workspace.reopen import CHANGED, COMPILE, REOPEN, plan_open
from npu_studio.core.workspace.workspace import compile_model

from .test_workspace_transactions import relu_model


def test_the_digest_is_of_the_content_not_the_path(tmp_path):
    a = relu_model(tmp_path / "a.onnx")
    b = tmp_path / "b" / "a.onnx"
    b.parent.mkdir()
    shutil.copy(a, b)
    assert model_digest(a) == model_digest(b)
    data = a.read_bytes()
    expected = hashlib.sha256(f"a.onnx\0{len(data)}\0".encode() + data).hexdigest()  # name, size, bytes
    assert model_digest(a) == expected
    b.write_bytes(data + b"\0")
    assert model_digest(a) != model_digest(b)


def test_unchanged_reopens_changed_says_so_legacy_and_new_compile(tmp_path):
    model = relu_model(tmp_path / "relu.onnx")
    root = tmp_path / "ws"
    assert plan_open(model, root).action == COMPILE  # no workspace yet
    compile_model(model, root)
    manifest = json.loads((root / "manifest.json").read_text())
    assert manifest["source_sha256"] == model_digest(model)
    plan = plan_open(model, root)
    assert plan.action == REOPEN and not plan.compiles and plan.root == root

    model.write_bytes(model.read_bytes()[:-1] + b"\x01")  # rewritten in place: same path, other bytes
    before = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}
    plan = plan_open(model, root)
    assert plan.action == CHANGED and not plan.compiles
    assert "Recompile" in plan.reason and "edits" in plan.reason and "rebuilt" in plan.reason

    assert {p: p.read_bytes() for p in root.rglob("*") if p.is_file()} == before  # planning wrote nothing

    manifest["source_sha256"] = ""  # a workspace from before content hashes
    (root / "manifest.json").write_text(json.dumps(manifest))
    assert plan_open(model, root).action == COMPILE
