"""Targets as documents: bundled ones stay untouched, edits become named user targets."""

from __future__ import annotations

import os

import pytest

from npu_studio.core.npu import target_store as store
from npu_studio.core.npu.target import RESOURCES, TargetError


def test_the_config_folder_comes_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("NPU_STUDIO_CONFIG", str(tmp_path / "cfg"))
    assert store.user_targets_dir() == tmp_path / "cfg" / "targets"
    monkeypatch.delenv("NPU_STUDIO_CONFIG")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert store.config_dir() == tmp_path / "xdg" / "npu-studio"


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


def test_a_user_target_knows_the_bundled_one_it_came_from_and_the_keys_changed():
    from npu_studio.core.build_summary import summarize_target

    tiny = RESOURCES / "tiny.toml"
    original = tiny.read_text()
    # the edit renames the target too: the note beside it, not the name, says where it came from
    edited = original.replace('name = "npu-tiny"', 'name = "mine"').replace("lanes = ", "lanes = 1", 1)
    assert edited.count("lanes = 1") == 1
    saved = store.save_edit(edited, tiny)
    assert store.bundled_origin(saved) == tiny
    lanes_before = int(original.split("lanes = ", 1)[1].split()[0])
    assert store.changed_keys(saved, tiny) == [("name", "npu-tiny", "mine"),
                                               ("vector.lanes", lanes_before, int(f"1{lanes_before}"))]
    # an edit of the user target keeps its origin; a copy under a new name too
    again = store.save_edit(edited.replace('name = "mine"', 'name = "mine2"'), saved)
    assert again == saved and store.bundled_origin(again) == tiny
    assert store.bundled_origin(store.save_edit(edited, saved, name="copy")) == tiny
    summary = summarize_target(saved)
    assert not summary.bundled and summary.origin == tiny and summary.text().startswith(
        f"NPU target {saved.stem} (user): 2 keys changed from bundled tiny: name npu-tiny → mine2")
    # a user target written by hand, without a note: the bundled one of the same `name`
    by_hand = store.user_targets_dir() / "by-hand.toml"
    by_hand.write_text(original.replace("lanes = ", "lanes = 2", 1))
    assert store.bundled_origin(by_hand) == tiny
    assert summarize_target(RESOURCES / "default.toml").text() == "NPU target default (bundled)"
