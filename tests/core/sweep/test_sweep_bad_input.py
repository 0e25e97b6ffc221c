"""Bad sweep input is one line and exit code 2, within seconds, in bounded memory; results are
never lost: a folder a sweep did not make is refused, a damaged cached row is recomputed.

The spec cases run in one child Python under a 4 GiB address-space limit (RLIMIT_AS), each
timed: an unbounded list (a range to 1e18, a grid of 1e9 points) would be a MemoryError there,
or take minutes.
"""

from __future__ import annotations

import http.server
import json
import os
import socket
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from npu_studio.cli import main

ROOT = Path(__file__).resolve().parents[3]
GOOD = """
target = "default"
models = ["{model}"]

[parameters]
"sram.size_kib" = [32, 64]
"dram.bytes_per_cycle" = [16, 64]
"""

# (case, spec text with {model}, what the one line must hold)
SPEC_CASES = [
    ("range to 1e18", GOOD.replace("[32, 64]", "{ range = [1, 1e18, 1] }"), "more than 10,000 values"),
    ("integer range to 10**18", GOOD.replace("[32, 64]", "{ range = [1, 1000000000000000000, 1] }"),
     "more than 10,000 values"),
    ("range to inf", GOOD.replace("[32, 64]", "{ range = [1, inf, 1] }"), "must be finite"),
    ("NaN value", GOOD.replace("[32, 64]", "[32, nan]"), "nan is not a finite number"),
    ("NaN step", GOOD.replace("[32, 64]", "{ range = [1, 10, nan] }"), "must be finite"),
    ("1e-300 step", GOOD.replace("[32, 64]", "{ range = [1, 2, 1e-300] }"), "more than 10,000 values"),
    ("grid of 1e9", GOOD.replace('"sram.size_kib" = [32, 64]', '"sram.size_kib" = { range = [1, 1000, 1] }\n'
                                 '"clock_mhz" = { range = [1, 1000, 1] }').replace(
        "[16, 64]", "{ range = [1, 1000, 1] }"), "the grid has more than 100,000 points"),
    ("latin hypercube of 1e9", GOOD + '\n[sampling]\nmethod = "latin-hypercube"\npoints = 1000000000\n',
     "sampling.points: 1,000,000,000 points; at most 100,000"),
    ("random of 1e9", GOOD + '\n[sampling]\nmethod = "random"\npoints = 1000000000\n', "at most 100,000"),
    ("number for [sampling]", "sampling = 5\n" + GOOD, "sampling: expected a table, got a number"),
    ("number for [constraints]", "constraints = 3\n" + GOOD, "constraints: expected a table, got a number"),
    ("number for [parameters]", GOOD.split("[parameters]")[0] + "parameters = 7\n",
     "parameters: expected a table"),
    ("number for a target table", GOOD.replace('"sram.size_kib"', '"clock_mhz.x"'),
     "clock_mhz is not a table of the target"),
    ("deep dotted key", GOOD.replace('"sram.size_kib"', '"sram.a.b.c.d"'),
     "parameters.sram.a.b.c.d: sram.a.b.c.d: 5 dotted parts; a target key has at most 3"),
    ("very deep dotted key", GOOD.replace('"sram.size_kib"', '"' + ".".join(["a"] * 5000) + '"'),
     "...: expected a target key of at most 1000 characters"),
    ("negative seed", GOOD + '\n[sampling]\nmethod = "random"\npoints = 3\nseed = -1\n',
     "sampling.seed: expected an integer from 0 to 2**63-1"),
    ("NUL in a model path", GOOD.replace('"{model}"', '"{model}\\u0000x"'), "a NUL byte"),
    ("last of 10,000 values out of range",
     GOOD.replace("[32, 64]", "[" + ", ".join(map(str, range(1, 10_000))) + ", 99999999999]"),
     "99999999999: sram.size_kib: 99,999,999,999 is out of range"),
    ("100,000 values", GOOD.replace("[32, 64]", "[" + ", ".join(map(str, range(1, 100_001))) + "]"),
     "100,000 values; at most 10,000 per parameter"),
    ("infinite constraint", GOOD + "\n[constraints]\ncycles = { max = inf }\n", "finite"),
]

DRIVER = textwrap.dedent("""
    import json, resource, sys, time
    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
    import contextlib, io
    from npu_studio.cli import main
    out = []
    for spec, dest in json.loads(sys.argv[1]):
        err = io.StringIO()
        start = time.monotonic()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            code = main(["sweep", spec, "--jobs", "1", "--out", dest])
        out.append((code, err.getvalue(), time.monotonic() - start))
    print(json.dumps(out))
""")


def _spec(tmp_path: Path, text: str, model: Path, name: str = "s.toml") -> Path:
    path = tmp_path / name
    path.write_text(text.replace("{model}", str(model)))
    return path


def test_every_bad_spec_is_one_line_exit_2_within_seconds_in_4_gib(sweep_models, tmp_path):
    specs = [_spec(tmp_path, text, sweep_models[0], f"case{i}.toml") for i, (_, text, _) in enumerate(SPEC_CASES)]
    jobs = [(str(s), str(tmp_path / f"out{i}")) for i, s in enumerate(specs)]
    proc = subprocess.run([sys.executable, "-c", DRIVER, json.dumps(jobs)], capture_output=True, text=True,
                          timeout=600, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(proc.stdout.splitlines()[-1])
    for (case, _, reason), spec, (code, err, seconds) in zip(SPEC_CASES, specs, results):
        lines = err.strip().splitlines()
        assert code == 2, (case, err)
        assert len(lines) == 1 and "Traceback" not in err, (case, err)
        assert lines[0].startswith(f"npu-studio: error: {spec}"), (case, lines[0])
        assert reason in lines[0], (case, lines[0])
        assert seconds < 5, (case, seconds)
    assert not any((tmp_path / f"out{i}").exists() for i in range(len(specs)))  # refused before any work


# -- the results folder ----------------------------------------------------------------------------

def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_without_out_results_go_to_a_new_folder_under_the_home_never_beside_the_spec(
        sweep_models, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("NPU_STUDIO_HOME", str(tmp_path / "home"))
    spec = _spec(tmp_path, GOOD, sweep_models[0])
    beside = tmp_path / "s"  # the folder the spec's name gave before: the user's own results
    (beside / "cache").mkdir(parents=True)
    (beside / "results.csv").write_text("my,results\n1,2\n")
    (beside / "sweep.json").write_text('{"mine": true}')
    (beside / "cache" / ("0" * 64 + ".json")).write_text('{"status": "ok"}')
    before = _tree(beside)
    assert main(["sweep", str(spec), "--jobs", "1"]) == 0
    first = Path(capsys.readouterr().err.splitlines()[0].removeprefix("results in "))
    assert first.parent == tmp_path / "home" / "sweeps" and (first / "results.csv").is_file()
    assert main(["sweep", str(spec), "--jobs", "1"]) == 0  # a second run: another new folder
    second = Path(capsys.readouterr().err.splitlines()[0].removeprefix("results in "))
    assert second != first and (first / "results.csv").is_file() and (second / "results.csv").is_file()
    assert main(["sweep", str(spec), "--jobs", "1", "--resume"]) == 0  # the latest, resumed
    captured = capsys.readouterr()
    assert captured.err.splitlines()[0] == f"results in {second}"
    assert "computed 0, from the cache 4" in captured.out
    assert _tree(beside) == before


def test_a_folder_the_sweep_did_not_make_is_refused_and_kept(sweep_models, tmp_path, capsys):
    spec = _spec(tmp_path, GOOD, sweep_models[0])
    out = tmp_path / "theirs"
    (out / "cache").mkdir(parents=True)
    (out / "results.csv").write_text("my,results\n")
    (out / "sweep.json").write_text(json.dumps({"spec": str(spec), "models": {}}))  # not ours: no marker
    (out / "cache" / ("a" * 64 + ".json")).write_text("{}")
    before = _tree(out)
    for extra in ([], ["--resume"]):
        assert main(["sweep", str(spec), "--jobs", "1", "--out", str(out), *extra]) == 2
        err = capsys.readouterr().err.strip()
        assert err == (f"npu-studio: error: {out}: --out: not a sweep results folder (no sweep.json written "
                       "by npu-studio sweep); name a new or empty folder")
    assert _tree(out) == before


def test_a_rerun_deletes_only_the_rows_it_wrote(sweep_models, tmp_path, capsys):
    spec = _spec(tmp_path, GOOD, sweep_models[0])
    out = tmp_path / "o"
    assert main(["sweep", str(spec), "--jobs", "1", "--out", str(out)]) == 0
    rows = sorted(p.name for p in (out / "cache").iterdir())
    assert len(rows) == 4
    (out / "cache" / "notes.json").write_text("my notes")  # a user's file in the sweep's folder
    (out / "cache" / "keep.txt").write_text("mine")
    assert main(["sweep", str(spec), "--jobs", "1", "--out", str(out)]) == 0
    assert "computed 4, from the cache 0" in capsys.readouterr().out  # not a resume: recomputed
    assert (out / "cache" / "notes.json").read_text() == "my notes" and (out / "cache" / "keep.txt").is_file()


@pytest.mark.parametrize("out", ["file/sub", "file", "nul"])
def test_an_unwritable_out_is_one_line(sweep_models, tmp_path, capsys, out):
    spec = _spec(tmp_path, GOOD, sweep_models[0])
    (tmp_path / "file").write_text("x")
    target = "/proc/version/out" if out == "nul" else str(tmp_path / out)
    assert main(["sweep", str(spec), "--jobs", "1", "--out", target]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err and err.startswith("npu-studio: error: ")
    assert (tmp_path / "file").read_text() == "x"


@pytest.mark.parametrize("damage", [b"", b"{\"status\": ", b"[]", b"{\"status\": \"ok\", \"cycles\": \"x\"}",
                                    b"\xff\xfe", b"[" * 10_000 + b"]" * 10_000, "folder"])
def test_resume_over_a_damaged_row_recomputes_it_and_says_so(sweep_models, tmp_path, capsys, damage):
    spec = _spec(tmp_path, GOOD, sweep_models[0])
    out = tmp_path / "o"
    assert main(["sweep", str(spec), "--jobs", "1", "--out", str(out)]) == 0
    capsys.readouterr()
    want = {p.name: json.loads(p.read_text()) for p in (out / "cache").iterdir()}
    victim = sorted(out.joinpath("cache").iterdir())[1]
    victim.unlink()
    if damage == "folder":
        victim.mkdir()
    else:
        victim.write_bytes(damage)
    code = main(["sweep", str(spec), "--jobs", "1", "--out", str(out), "--resume"])
    captured = capsys.readouterr()
    if damage == "folder":  # not ours to delete: one line naming it, the folder kept
        assert code == 2 and captured.err.strip() == (f"npu-studio: error: {victim}: is a folder where the "
                                                       "sweep keeps a row; move it away")
        assert victim.is_dir()
        return
    assert code == 0, captured.err
    assert "computed 1, from the cache 3" in captured.out
    assert f"recomputed 1 damaged cached row(s): cache/{victim.name}: " in captured.out
    assert json.loads(victim.read_text()) == want[victim.name]  # the same row, computed again


# -- Dask addresses --------------------------------------------------------------------------------

def _silent_port():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)  # accepts (the kernel does) and never answers
    return sock, sock.getsockname()[1]


class _Responder(http.server.BaseHTTPRequestHandler):
    def setup(self):  # answers at once, before any request: what distributed would read as a length
        super().setup()
        self.wfile.write(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")

    def handle(self):
        pass


@pytest.mark.parametrize("kind", ["silent", "http", "responder", "tls", "ucx"])
def test_a_dask_address_that_is_not_a_scheduler_is_one_line_within_10_s(sweep_models, tmp_path, capsys, kind):
    spec = _spec(tmp_path, GOOD, sweep_models[0])
    keep = []
    if kind == "silent":
        sock, port = _silent_port()
        keep.append(sock)
        address = f"tcp://127.0.0.1:{port}"
    elif kind in ("http", "responder"):
        handler = http.server.SimpleHTTPRequestHandler if kind == "http" else _Responder
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        keep.append(server)
        address = f"tcp://127.0.0.1:{server.server_address[1]}"
    else:
        address = f"{kind}://127.0.0.1:8786"
    start = time.monotonic()
    try:
        code = main(["sweep", str(spec), "--dask", address, "--out", str(tmp_path / "o")])
    finally:
        for k in keep:
            if isinstance(k, socket.socket):
                k.close()
            else:
                k.shutdown()
                k.server_close()
    seconds = time.monotonic() - start
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "Traceback" not in err[0], err
    assert seconds < 10
    if kind in ("tls", "ucx"):
        assert err[0].startswith(f"npu-studio: error: Dask address '{address}': {kind}:// ")
    else:
        assert err[0].startswith(f"npu-studio: error: cannot reach the Dask scheduler at {address}: ")
