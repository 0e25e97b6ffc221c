"""A user target knows the bundled target it was made from, and which keys it changes (the build summary)."""

from __future__ import annotations

from npu_studio.core.npu.target import target_store as store
from npu_studio.core.npu.target.target import RESOURCES


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
