"""Targets as documents: bundled ones stay untouched, edits become named user targets."""

from __future__ import annotations

import os

import pytest

from npu_studio.core.npu.target import target_store as store
from npu_studio.core.npu.target.target import RESOURCES, TargetError


def test_the_config_folder_comes_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("NPU_STUDIO_CONFIG", str(tmp_path / "cfg"))
    assert store.user_targets_dir() == tmp_path / "cfg" / "targets"
    monkeypatch.delenv("NPU_STUDIO_CONFIG")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert store.user_targets_dir() == tmp_path / "xdg" / "npu-studio" / "targets"


def test_editing_a_bundled_target_makes_a_named_user_target():
    default = RESOURCES / "default.toml"
    original = default.read_text()
    assert [t.name for t in store.list_targets()] == ["default", "tiny"]
    edited = original.replace('name = "npu-mid"', 'name = "npu-edited"')
    first = store.save_edit(edited, default)
    assert first == store.user_targets_dir() / "default-edited.toml"
    assert first.read_text() == edited and default.read_text() == original
    # A second edit of the bundled file does not overwrite the first user target.
    second = store.save_edit(original, default)
    assert second.name == "default-edited-2.toml" and first.read_text() == edited
    # Editing a user target saves it in place; an explicit name saves a copy under that name.
    assert store.save_edit(original, first) == first and first.read_text() == original
    assert store.save_edit(edited, first, name="mine").name == "mine.toml"
    docs = store.list_targets()
    assert [(t.label, t.bundled) for t in docs] == [
        ("default (bundled)", True), ("tiny (bundled)", True),
        ("default-edited (user)", False), ("default-edited-2 (user)", False), ("mine (user)", False)]
    assert str(store.user_targets_dir()).startswith(os.environ["NPU_STUDIO_CONFIG"])


def test_bad_edits_and_names_are_refused_and_nothing_is_written():
    default = RESOURCES / "default.toml"
    bad = default.read_text().replace("rows = 32", "rows = -32")
    with pytest.raises(TargetError, match=f"^{default}:11: mac_array.rows"):
        store.save_edit(bad, default)
    with pytest.raises(TargetError, match="not a target name"):
        store.save_edit(default.read_text(), default, name="../escape")
    assert store.user_targets() == []


def test_recording_the_same_target_again_leaves_the_record_untouched(tmp_path):
    default = RESOURCES / "default.toml"
    text = default.read_text()
    store.record(tmp_path, text, default)
    files = [tmp_path / store.RECORD_TOML, tmp_path / store.RECORD_JSON]
    for f in files:
        os.utime(f, ns=(1_000_000_000, 1_000_000_000))  # a known old time, to see any rewrite
    again = store.record(tmp_path, text, default)
    assert [f.stat().st_mtime_ns for f in files] == [1_000_000_000] * 2
    assert again.name == "npu-mid" and (tmp_path / store.RECORD_TOML).read_text() == text
    store.record(tmp_path, text.replace('name = "npu-mid"', 'name = "npu-other"'), default)
    assert [f.stat().st_mtime_ns > 1_000_000_000 for f in files] == [True, True]
