"""Sweep results folders and Dask servers someone else made: nothing outside the folder changes, a
damaged row of any kind is recomputed and said so, a spec nested without end and a Dask server that
stalls after its first frame are one line, exit 2, within seconds.

Truths: the file system (the user's folder byte-identical), the rows a clean run computes (a
recomputed row equals it), and distributed's own handshake frame (built with its own functions)
for the fake server.
"""

from __future__ import annotations

import asyncio
import json
import os
import pickle
import socket
import struct
import sys
import threading
import time
from pathlib import Path

import pytest

from npu_studio.cli import main

from test_sweep_bad_input import GOOD, _spec  # noqa: E402 (tests/core/sweep is on sys.path: conftest.py)


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): (p.read_bytes() if p.is_file() else b"<dir>") for p in sorted(root.rglob("*"))}


def _one_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Traceback" not in err[0] and err[0].startswith("npu-studio: error: "), err
    return err[0]


def test_a_received_results_folder_never_writes_through_its_linked_cache(sweep_models, tmp_path, capsys):
    spec = _spec(tmp_path, GOOD, sweep_models[0])
    mine = tmp_path / "users-files"
    mine.mkdir()
    (mine / ("a" * 64 + ".json")).write_text('{"status": "ok", "reason": ""}')  # named like a cached row
    (mine / "notes.txt").write_text("mine")
    before = _tree(mine)
    out = tmp_path / "u3"
    out.mkdir()
    (out / "sweep.json").write_text(json.dumps({"made_by": "npu-studio sweep", "spec": str(spec), "models": {}}))
    (out / "cache").symlink_to(mine, target_is_directory=True)

    for extra in ([], ["--resume"]):
        assert main(["sweep", str(spec), "--jobs", "1", "--out", str(out), *extra]) == 2
        assert "cache is a symbolic link" in _one_line(capsys)
        assert _tree(mine) == before


DAMAGE = {  # what the row file says instead -> the reason given for recomputing it
    "cycles NaN": ('"cycles": NaN', "NaN"),
    "cycles 1e400": ('"cycles": 1e400', "out of range"),
    "cycles 1e30": ('"cycles": 1e30', "cycles: expected an integer"),
    "cycles 1.5": ('"cycles": 1.5', "cycles: expected an integer"),
    "cycles negative": ('"cycles": -3', "negative"),
    "meets_constraints yes": ('"meets_constraints": "yes", "cycles": 1', "meets_constraints: not a key"),
    "model of the table's": ('"model": 5, "cycles": 1', "model: not a key"),
    "status unknown": ('"cycles": 1, "status": "great"', "status is not one of"),
}


@pytest.mark.parametrize("case", DAMAGE)
def test_resume_recomputes_a_row_with_values_of_the_wrong_type_or_range(sweep_models, tmp_path, capsys, case):
    spec = _spec(tmp_path, GOOD, sweep_models[0])
    out = tmp_path / "o"
    assert main(["sweep", str(spec), "--jobs", "1", "--out", str(out)]) == 0
    capsys.readouterr()
    victim = sorted((out / "cache").iterdir())[1]
    want = json.loads(victim.read_text())
    text, reason = DAMAGE[case]
    damaged = json.dumps({k: v for k, v in want.items() if k != "cycles"})[:-1] + ", " + text + "}"
    if '"status": "great"' in text:
        damaged = damaged.replace('"status": "ok", ', "")
    victim.write_text(damaged)

    code = main(["sweep", str(spec), "--jobs", "1", "--out", str(out), "--resume"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "computed 1, from the cache 3" in captured.out
    assert f"recomputed 1 damaged cached row(s): cache/{victim.name}: " in captured.out and reason in captured.out
    assert json.loads(victim.read_text()) == want  # the same row, computed again
    import pyarrow.parquet as pq

    assert pq.read_table(out / "results.parquet").num_rows == 4


def test_a_spec_nested_5000_deep_is_one_line(sweep_models, tmp_path, capsys):
    deep = "[" * 5000 + "32" + "]" * 5000  # 20 KB
    spec = _spec(tmp_path, GOOD.replace("[32, 64]", deep), sweep_models[0])
    start = time.monotonic()
    assert main(["sweep", str(spec), "--jobs", "1", "--out", str(tmp_path / "o")]) == 2
    assert "nested" in _one_line(capsys) and time.monotonic() - start < 10


def test_a_spec_nested_past_the_limit_but_parsable_is_one_line(sweep_models, tmp_path, capsys):
    spec = _spec(tmp_path, GOOD.replace("[32, 64]", "[" * 40 + "32" + "]" * 40), sweep_models[0])
    assert main(["sweep", str(spec), "--jobs", "1", "--out", str(tmp_path / "o")]) == 2
    assert "nested more than 16 levels" in _one_line(capsys)


# -- a Dask server that answers its first frame, then stalls or announces 2**61 bytes ----------------


def _handshake() -> bytes:
    """The first message a Dask server sends, made with distributed's own framing."""
    from distributed.comm.tcp import _add_frames_header
    from distributed.comm.utils import to_frames

    info = {"compression": None, "python": tuple(sys.version_info)[:3], "pickle-protocol": pickle.HIGHEST_PROTOCOL}
    frames, _, _ = _add_frames_header(asyncio.run(to_frames(info, allow_offload=False)))
    return b"".join(bytes(f) for f in frames)


class _FakeScheduler:
    def __init__(self, then: bytes):
        self.first, self.then = _handshake(), then
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port, self.conns = self.sock.getsockname()[1], []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            conn.sendall(self.first + self.then)
            self.conns.append(conn)  # kept open and silent

    def close(self):
        self.sock.close()
        for c in self.conns:
            c.close()


@pytest.mark.parametrize("then", [b"", struct.pack("<Q", 1 << 61)], ids=["stalls", "2**61 bytes"])
def test_a_dask_server_that_passes_the_first_frame_is_one_line_within_10_s(sweep_models, tmp_path, capsys, then):
    spec = _spec(tmp_path, GOOD, sweep_models[0])
    server = _FakeScheduler(then)
    start = time.monotonic()
    try:
        code = main(["sweep", str(spec), "--dask", f"tcp://127.0.0.1:{server.port}", "--out", str(tmp_path / "o")])
    finally:
        server.close()
    seconds = time.monotonic() - start
    line = _one_line(capsys)
    assert code == 2 and seconds < 10, (seconds, line)
    assert line.startswith(f"npu-studio: error: cannot reach the Dask scheduler at tcp://127.0.0.1:{server.port}: ")
    assert os.listdir(tmp_path / "o") == ["sweep.json"]  # nothing computed, nothing else written
