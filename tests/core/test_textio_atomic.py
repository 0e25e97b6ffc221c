"""textio.write_text_atomic / write_bytes_atomic: the one atomic writer every module uses."""

from __future__ import annotations

import os
import threading

import pytest

from npu_studio.core import textio
from npu_studio.core.errors import BadFile
from npu_studio.core.textio import write_bytes_atomic, write_text_atomic


def leftovers(folder) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def test_text_is_written_as_utf8(tmp_path):
    path = tmp_path / "note.txt"
    write_text_atomic(path, "µs ± 1 — ok\n")
    assert path.read_bytes() == "µs ± 1 — ok\n".encode("utf-8")
    assert leftovers(tmp_path) == []


def test_replaces_the_old_content_whole(tmp_path):
    path = tmp_path / "manifest.json"
    path.write_text("old old old old")
    write_text_atomic(path, "new")
    assert path.read_text() == "new"


def test_bytes_are_written_as_they_are(tmp_path):
    path = tmp_path / "index.pickle"
    write_bytes_atomic(path, bytes(range(256)))
    assert path.read_bytes() == bytes(range(256))


def test_permissions_follow_the_umask_like_open(tmp_path):
    old = os.umask(0o027)
    try:
        write_text_atomic(tmp_path / "a", "x")
    finally:
        os.umask(old)
    assert (tmp_path / "a").stat().st_mode & 0o777 == 0o640


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path, monkeypatch):
    path = tmp_path / "draft.mlir"
    path.write_text("old")

    def disk_full(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(textio.os, "fsync", disk_full)
    with pytest.raises(BadFile) as err:
        write_text_atomic(path, "new")
    assert path.read_text() == "old"
    assert leftovers(tmp_path) == []
    assert str(err.value).startswith(str(path))  # the file the user knows, not the temporary
    assert "cannot write: No space left on device" in str(err.value)


def test_text_that_cannot_be_encoded_keeps_the_old_file(tmp_path):
    path = tmp_path / "draft.mlir"
    path.write_text("old")
    with pytest.raises(UnicodeEncodeError):
        write_text_atomic(path, "half a surrogate \udc80")
    assert path.read_text() == "old"
    assert leftovers(tmp_path) == []


def test_a_folder_in_the_way_is_a_bad_file_and_leaves_nothing(tmp_path):
    (tmp_path / "out.json").mkdir()
    with pytest.raises(BadFile, match="cannot write"):
        write_text_atomic(tmp_path / "out.json", "{}")
    assert (tmp_path / "out.json").is_dir()
    assert leftovers(tmp_path) == []


def test_a_missing_folder_is_a_bad_file(tmp_path):
    with pytest.raises(BadFile, match="cannot write"):
        write_text_atomic(tmp_path / "gone" / "x.txt", "x")
    assert not (tmp_path / "gone").exists()


def test_threads_writing_one_file_never_share_a_temporary(tmp_path):
    path = tmp_path / "row.json"
    texts = [str(i) * 10_000 for i in range(8)]
    errors = []

    def write(text):
        try:
            for _ in range(20):
                write_text_atomic(path, text)
        except Exception as exc:  # noqa: BLE001 - collected for the assert below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(t,)) for t in texts]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert path.read_text() in texts  # one writer's whole text
    assert leftovers(tmp_path) == []
