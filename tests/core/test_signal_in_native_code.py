"""SIGINT and SIGTERM end the CLI within about a second even while the main thread is inside native code.

The workspace's input snapshot is replaced by a module of 400,000 functions, whose parse (in
`run`, to read the entry point's signature) keeps the main thread in the MLIR parser, holding the
GIL, for many seconds. The signal is sent a few seconds in; the CLI must end with one line long
before the parse could have finished. How long the parse takes alone is checked too, so the test
cannot pass merely because the parse was quick.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from ..conftest import REPO

FUNCTIONS = 400_000


@pytest.fixture(scope="module")
def slow_workspace(example_workspace, tmp_path_factory):
    ws = tmp_path_factory.mktemp("slow") / "ws"
    shutil.copytree(example_workspace.root, ws)
    with open(ws / "phases" / "01.input.mlir", "w") as f:
        for i in range(FUNCTIONS):
            f.write(f"func.func @f{i}(%a: tensor<4xf32>) -> tensor<4xf32> {{\n"
                    "  %0 = arith.addf %a, %a : tensor<4xf32>\n  return %0 : tensor<4xf32>\n}\n")
    return ws


def start(ws):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    # SIGINT as a terminal sends it: a test run started in the background inherits it ignored.
    return subprocess.Popen([sys.executable, "-m", "npu_studio", "run", str(ws)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, env=env,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def test_the_parse_alone_takes_long(slow_workspace):
    from iree.compiler import ir

    from npu_studio.core.ir.context import mlir_context

    text = (slow_workspace / "phases" / "01.input.mlir").read_text()
    t0 = time.perf_counter()
    ir.Module.parse(text, mlir_context())
    assert time.perf_counter() - t0 > 1.5  # several times the watchdog's one-second grace


@pytest.mark.parametrize("sig, line", [(signal.SIGTERM, "npu-studio: terminated"),
                                       (signal.SIGINT, "npu-studio: interrupted")], ids=["SIGTERM", "SIGINT"])
def test_a_signal_inside_a_long_parse_ends_the_cli(sig, line, slow_workspace):
    cli = start(slow_workspace)
    try:
        time.sleep(4)  # past the imports, reading and into the parse
        assert cli.poll() is None, "the run ended before the signal"
        t0 = time.perf_counter()
        cli.send_signal(sig)
        _, err = cli.communicate(timeout=60)
        took = time.perf_counter() - t0
    finally:
        if cli.poll() is None:
            cli.kill()
    assert err.decode().splitlines() == [line]
    assert cli.returncode in (-signal.SIGKILL, 130 if sig == signal.SIGINT else 143)
    assert took < 5, f"the CLI took {took:.1f} s to end"
