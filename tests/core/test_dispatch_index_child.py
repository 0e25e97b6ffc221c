"""The dispatch index built in a child process (core/ir/dispatch_index/child.py) and its chunked form
(chunked.py), checked against the in-process `index_file`, the truth the CLI has always used."""

from __future__ import annotations

import os
import pickle
import shutil
import signal
import threading
import time
from pathlib import Path

import pytest

from npu_studio.core import paths
from npu_studio.core.compile.phases import SNAPSHOT_PHASES
from npu_studio.core.errors import BadFile, Cancelled, StudioError
from npu_studio.core.ir.dispatch_index import chunked, index_file
from npu_studio.core.ir.dispatch_index.child import build_index, index_in_child
from npu_studio.core.ir.mlir_text import SnapshotParseError
from npu_studio.core.workspace import index_cache
from tests.zoo_cache import zoo_workspace

CHILD_MODULE = "npu_studio.core.ir.dispatch_index.child"


def index_children() -> list[int]:
    """Pids of this process's children that run the index child, read from /proc."""
    found = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == os.getpid() and CHILD_MODULE.encode() in cmdline:
            found.append(int(entry))
    return found


def wait_for_child(timeout: float = 60.0) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pids = index_children()
        if pids:
            return pids[0]
        time.sleep(0.005)
    raise AssertionError("the index child never started")


def snapshots(ws) -> list[tuple[Path, str]]:
    return [(ws.snapshot_path(phase), phase) for phase in SNAPSHOT_PHASES if ws.snapshot_path(phase).exists()]


def test_the_childs_index_equals_the_in_process_one_on_every_phase(example_workspace):
    for path, phase in snapshots(example_workspace):
        expected = index_file(path, phase)
        got = index_in_child(path, phase)
        assert got.index == expected, (phase, "dataclass equality: every field and every record")
        assert got.index.to_json() == expected.to_json()
        assert chunked.decode(got.blob) == expected


def test_the_childs_index_equals_the_in_process_one_on_a_zoo_model():
    ws = zoo_workspace("resnet50")
    for phase in ("dispatch-creation", "flow", "stream", "executable-targets", "hal"):
        path = ws.snapshot_path(phase)
        expected = index_file(path, phase)
        got = index_in_child(path, phase).index
        assert len(got.dispatches) == len(expected.dispatches) > 0
        for mine, theirs in zip(got.dispatches, expected.dispatches):
            assert mine == theirs, (phase, theirs.index)
        assert got == expected


def test_a_syntax_error_is_the_same_one_line_error_from_the_child(example_workspace, tmp_path):
    bad = tmp_path / "06.flow.mlir"
    lines = example_workspace.snapshot_path("flow").read_text().split("\n")
    at = next(i for i, line in enumerate(lines) if "flow.dispatch @" in line)
    lines[at] = lines[at].replace("flow.dispatch @", "flow.dispatch %% @", 1)
    bad.write_text("\n".join(lines))

    with pytest.raises(SnapshotParseError) as here:
        index_file(bad, "flow")
    with pytest.raises(SnapshotParseError) as there:
        index_in_child(bad, "flow")
    assert str(there.value) == str(here.value)
    assert str(there.value).startswith(f"{bad}:{at + 1}:")  # file:line:col of the broken line
    assert "\n" not in str(there.value)
    assert (there.value.line, there.value.col) == (here.value.line, here.value.col)


def test_an_unreadable_snapshot_is_the_same_bad_file_error(tmp_path):
    binary = tmp_path / "06.flow.mlir"
    binary.write_bytes(b"module {\n\xff\xfe}\n")
    with pytest.raises(BadFile) as here:
        index_file(binary, "flow")
    with pytest.raises(BadFile) as there:
        index_in_child(binary, "flow")
    assert str(there.value) == str(here.value) and str(binary) in str(there.value)


def test_a_cancelled_index_leaves_no_child(tmp_path):
    blocked = tmp_path / "06.flow.mlir"
    os.mkfifo(blocked)  # the child waits on it for a writer that never comes: alive until stopped
    stoppers = []
    done: dict = {}

    def run():
        try:
            index_in_child(blocked, "flow", attach_stop=stoppers.append)
        except BaseException as exc:  # noqa: BLE001 - handed to the test's thread
            done["exc"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    pid = wait_for_child()
    assert len(stoppers) == 1
    stoppers[0]()  # what the job's CancelToken.cancel does
    thread.join(60)
    assert not thread.is_alive()
    assert isinstance(done.get("exc"), Cancelled)
    assert index_children() == [] and not Path(f"/proc/{pid}").exists()  # killed and reaped
    stoppers[0]()  # a token may call it again later: nothing happens


def test_a_crashed_child_is_an_error_naming_the_snapshot(tmp_path):
    blocked = tmp_path / "06.flow.mlir"
    os.mkfifo(blocked)
    done: dict = {}

    def run():
        try:
            index_in_child(blocked, "flow")
        except BaseException as exc:  # noqa: BLE001
            done["exc"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    os.kill(wait_for_child(), signal.SIGSEGV)
    thread.join(60)
    assert not thread.is_alive()
    exc = done.get("exc")
    assert type(exc) is StudioError and not isinstance(exc, Cancelled)
    assert str(exc).startswith(f"{blocked}: ") and f"signal {signal.SIGSEGV.value}" in str(exc)
    assert index_children() == []


def test_small_snapshots_stay_in_process_and_large_ones_go_to_a_child(example_workspace, tmp_path, monkeypatch):
    from npu_studio.core.ir.dispatch_index import child

    flow = example_workspace.snapshot_path("flow")
    assert isinstance(build_index(flow, "flow"), type(index_file(flow, "flow")))
    monkeypatch.setattr(child, "CHILD_MIN_BYTES", 0)
    built = build_index(flow, "flow")
    assert isinstance(built, chunked.Encoded) and built.index == index_file(flow, "flow")


def test_the_chunked_form_round_trips_and_rejects_a_damaged_stream(monkeypatch):
    index = index_file(zoo_workspace("resnet50").snapshot_path("flow"), "flow")
    monkeypatch.setattr(chunked, "CHUNK", 7)  # several chunks, the last one short
    assert len(index.dispatches) > 2 * chunked.CHUNK and len(index.dispatches) % chunked.CHUNK
    blob = chunked.encode(index)
    assert chunked.decode(blob) == index
    for cut in (0, 1, len(blob) // 3, len(blob) // 2, len(blob) - 1):
        with pytest.raises(ValueError):
            chunked.decode(blob[:cut])
    with pytest.raises(ValueError):
        chunked.decode(blob + pickle.dumps([]))
    with pytest.raises(ValueError):
        chunked.decode(pickle.dumps(index))  # the former cache format: one pickle of the whole index


def test_the_cache_keeps_the_childs_form_and_rebuilds_a_truncated_entry(example_workspace, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    flow = tmp_path / "06.flow.mlir"
    shutil.copy(example_workspace.snapshot_path("flow"), flow)
    built = []

    def in_child(path, phase):
        built.append(path)
        return index_in_child(path, phase)

    expected = index_file(flow, "flow")
    assert index_cache.cached_index(flow, "flow", in_child) == expected
    entry = paths.dispatch_index_cache_dir() / f"{index_cache.cache_key(flow.read_bytes(), 'flow')}.pickle"
    assert chunked.decode(entry.read_bytes()) == expected  # the entry is the chunked form
    assert entry.stat().st_mode & 0o777 == 0o600
    assert index_cache.cached_index(flow, "flow", in_child) == expected and built == [flow]  # from the cache

    entry.write_bytes(entry.read_bytes()[:-5])  # truncated
    assert index_cache.cached_index(flow, "flow", in_child) == expected and built == [flow, flow]
    entry.write_bytes(b"\x00" * 64)  # corrupt
    assert index_cache.cached_index(flow, "flow", index_file) == expected
    assert chunked.decode(entry.read_bytes()) == expected  # rewritten whole, in-process build this time
