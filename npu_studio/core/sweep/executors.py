"""Where a sweep's batches run: in this process, a local process pool, or a Dask cluster.

One interface: `run(models, batcher)` takes batches from the batcher as
workers free up (IN_FLIGHT per worker), reports each batch's measured time
back to it (batching.py sizes the next ones), and yields each batch's rows as
it completes (any order); `cancel()` drops the batches not started; `close()`
stops the workers. Each model's flow text goes to a worker once (pool:
the worker's initializer; Dask: one broadcast scatter), batches name it by
its hash.

Pool workers ask the kernel to kill them when we die (processes.py) and
are started with `spawn`: a fork of a process with threads (Qt, Dask) is
unsafe.
"""

from __future__ import annotations

import multiprocessing
import os
import re
import time
from collections.abc import Iterator
from concurrent import futures

from ..processes import die_with_parent
from .batching import Batcher
from .evaluate import evaluate_batch
from .spec import SweepError

Rows = list[tuple[str, dict]]
IN_FLIGHT = 2  # batches per worker handed over at once: the next one waits at the worker
DASK_SECONDS = 6.0  # the whole connection, probe included: with the spec read first, one line within 10 s

_models: dict[str, str] = {}  # a pool worker's flow texts, by hash


def _init_worker(parent: int, models: dict[str, str]) -> None:
    die_with_parent(parent)
    _models.update(models)


def _timed(model_hash: str, flow_text: str, batch: list) -> tuple[Rows, float]:
    start = time.perf_counter()
    rows = evaluate_batch(model_hash, flow_text, batch)
    return rows, time.perf_counter() - start


def _run_in_worker(model_hash: str, batch: list) -> tuple[Rows, float]:
    return _timed(model_hash, _models[model_hash], batch)


def _run_on_dask(flow_text: str, model_hash: str, batch: list) -> tuple[Rows, float]:
    return _timed(model_hash, flow_text, batch)


class SerialExecutor:
    """Everything in this process, batch after batch (one worker)."""

    workers = 1

    def __init__(self):
        self._cancelled = False

    def run(self, models: dict[str, str], batcher: Batcher) -> Iterator[Rows]:
        while not self._cancelled and (batch := batcher.next()) is not None:
            rows, seconds = _timed(batch[0], models[batch[0]], batch[1])
            batcher.record(len(rows), seconds)
            yield rows

    def cancel(self) -> None:
        self._cancelled = True

    def close(self) -> None:
        pass


class PoolExecutor:
    """A local process pool of `jobs` workers (default: every core)."""

    def __init__(self, jobs: int | None = None):
        self.workers = jobs or os.cpu_count() or 1
        self._pool: futures.ProcessPoolExecutor | None = None
        self._pending: set[futures.Future] = set()
        self._cancelled = False

    def run(self, models: dict[str, str], batcher: Batcher) -> Iterator[Rows]:
        self._pool = futures.ProcessPoolExecutor(
            max_workers=self.workers, mp_context=multiprocessing.get_context("spawn"),
            initializer=_init_worker, initargs=(os.getpid(), models))

        def submit() -> None:
            batch = None if self._cancelled else batcher.next()
            if batch is not None:
                self._pending.add(self._pool.submit(_run_in_worker, *batch))
        for _ in range(IN_FLIGHT * self.workers):
            submit()
        while self._pending:
            done, _ = futures.wait(self._pending, return_when=futures.FIRST_COMPLETED)
            for f in done:
                self._pending.discard(f)
                if f.cancelled():
                    continue
                rows, seconds = f.result()
                batcher.record(len(rows), seconds)
                submit()
                yield rows

    def cancel(self) -> None:
        self._cancelled = True
        for f in list(self._pending):
            f.cancel()

    def close(self) -> None:
        if self._pool is not None:
            self.cancel()
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None


class DaskExecutor:
    """A Dask cluster through `distributed`: an address, or a Client/LocalCluster given by tests."""

    def __init__(self, address, timeout: float = DASK_SECONDS):
        try:
            from distributed import Client
        except ImportError:  # an install without the optional dependency
            raise SweepError(None, "--dask needs the 'distributed' package (pip install "
                             "'dask[distributed]')") from None
        self._own = not hasattr(address, "submit")
        if self._own:
            deadline = time.monotonic() + timeout  # the whole refusal within `timeout`
            probe_scheduler(address, min(timeout, PROBE_SECONDS))
            self.client, workers = _connect(Client, address, deadline - time.monotonic())
        else:
            self.client = address
            workers = len(self.client.scheduler_info().get("workers", {}))
        self.workers = max(workers, 1)
        self._pending = []
        self._cancelled = False

    def run(self, models: dict[str, str], batcher: Batcher) -> Iterator[Rows]:
        from distributed import as_completed

        scattered = self.client.scatter(models, broadcast=True)  # once per worker, by hash
        running = as_completed(loop=self.client.loop)  # our client need not be the default one

        def submit() -> None:
            batch = None if self._cancelled else batcher.next()
            if batch is not None:
                f = self.client.submit(_run_on_dask, scattered[batch[0]], *batch, pure=False)
                self._pending.append(f)
                running.add(f)
        for _ in range(IN_FLIGHT * self.workers):
            submit()
        for f in running:
            if f.cancelled():
                continue
            rows, seconds = f.result()
            batcher.record(len(rows), seconds)
            submit()
            yield rows

    def cancel(self) -> None:
        self._cancelled = True
        if self._pending:
            self.client.cancel(self._pending)

    def close(self) -> None:
        self.cancel()
        if self._own:
            self.client.close()


DASK_SCHEMES = ("tcp", "tls", "ws", "wss", "ucx")  # what Dask knows; --dask takes tcp:// only
_UNSUPPORTED = {"tls": "needs certificates", "wss": "needs certificates", "ws": "needs a web socket server",
                "ucx": "needs UCX and its drivers"}
_ADDRESS = re.compile(r"^(?:(?P<scheme>[a-z]+)://)?(?P<host>\[[0-9a-fA-F:.]+\]|[A-Za-z0-9_.-]+)"
                      r":(?P<port>[0-9]{1,5})$")
PROBE_SECONDS = 5.0  # a scheduler sends its handshake at once; leaves time for Client's own connect
MAX_HANDSHAKE = 1 << 16  # a Dask scheduler's handshake is about a hundred bytes


def check_dask_address(text: str) -> str:
    """A scheduler address as Dask takes it (tcp:// added when no scheme is given);
    SweepError, one line, when it is not one or names a protocol --dask does not support."""
    m = _ADDRESS.match(text.strip())
    problem = None
    if m is None:
        problem = "expected HOST:PORT or SCHEME://HOST:PORT"
    elif (m["scheme"] or "tcp") not in DASK_SCHEMES:
        problem = f"unknown scheme {m['scheme']}:// (one of {', '.join(DASK_SCHEMES)})"
    elif m["scheme"] in _UNSUPPORTED:
        problem = f"{m['scheme']}:// {_UNSUPPORTED[m['scheme']]}, which --dask cannot set up; use tcp://"
    elif not 0 < int(m["port"]) < 65536:
        problem = f"port {m['port']} is not in 1..65535"
    if problem:
        raise SweepError(None, f"Dask address {text.strip()!r}: {problem}, e.g. tcp://head:8786")
    return f"{m['scheme'] or 'tcp'}://{m['host']}:{int(m['port'])}"


def probe_scheduler(address: str, timeout: float) -> None:
    """Check within `timeout` seconds that a Dask server answers at tcp://`address`: it sends its
    handshake (a small length-prefixed frame naming its pickle protocol) as soon as it accepts.
    A port that accepts and stays silent, an HTTP server, or anything else is refused with one
    line before `distributed` reads from it (it would wait, or allocate what a wrong length says)."""
    import socket
    import struct

    host, port = address.split("://", 1)[1].rsplit(":", 1)
    host = host.strip("[]")
    deadline = time.monotonic() + timeout

    def refuse(why: str) -> SweepError:
        return SweepError(None, f"cannot reach the Dask scheduler at {address}: {why}")

    def read(sock, n: int) -> bytes:
        data = b""
        while len(data) < n:
            left = deadline - time.monotonic()
            if left <= 0:
                raise refuse(f"no Dask handshake within {timeout:g} s (is it a Dask scheduler?)")
            sock.settimeout(left)
            try:
                chunk = sock.recv(n - len(data))
            except TimeoutError:
                continue
            if not chunk:
                raise refuse("the connection was closed without a Dask handshake")
            data += chunk
        return data

    try:
        with socket.create_connection((host, int(port)), timeout=timeout) as sock:
            (size,) = struct.unpack("<Q", read(sock, 8))
            if not 8 <= size <= MAX_HANDSHAKE:
                raise refuse("the server's first bytes are not a Dask handshake")
            if b"pickle-protocol" not in read(sock, size):
                raise refuse("the server's first message is not a Dask handshake")
    except OSError as e:
        raise refuse(e.strerror or str(e) or type(e).__name__) from None


def _connect(client_class, address: str, seconds: float):
    """(Client, number of workers) of the scheduler at `address`, within `seconds` whatever the server
    does; SweepError (one line) otherwise.

    A server can pass the probe's first frame and then stall, or announce a frame of 2**61 bytes:
    distributed's Client then waits past its own timeout, and a failed Client's clean-up waits 20 s
    more. So the connection is made on a daemon thread we stop waiting for at the deadline; its
    failure, whatever its type, is this one line, and a Client that never answered is left to
    that thread (it cannot keep the process alive)."""
    import threading

    outcome: dict = {}

    def attempt() -> None:
        client = client_class.__new__(client_class)  # kept: a failed one is abandoned below
        try:
            client.__init__(address, timeout=max(seconds, 0.1), set_as_default=False)
            outcome["workers"] = len(client.scheduler_info().get("workers", {}))
            outcome["client"] = client
        except BaseException as e:  # noqa: BLE001 - any failure of the connection is the one line below
            outcome["error"] = (str(e).splitlines() or [""])[0].strip() or type(e).__name__
            _abandon(client)

    thread = threading.Thread(target=attempt, name="dask-connect", daemon=True)
    thread.start()
    thread.join(max(seconds, 0.0))

    def refuse(why: str) -> SweepError:
        return SweepError(None, f"cannot reach the Dask scheduler at {address}: {why}")

    if "client" in outcome:
        return outcome["client"], outcome["workers"]
    if "error" in outcome:
        raise refuse(outcome["error"])
    raise refuse(f"no Dask answer within {seconds:.0f} s after its first frame (is it a Dask scheduler?)")


def _abandon(client) -> None:
    """Mark a Client that failed to connect closed and stop its event loop thread: its own clean-up
    (`Client.__del__` -> `close()`) would otherwise wait up to twice its timeout on the dead
    connection, at exit if not before."""
    from contextlib import suppress

    with suppress(Exception):
        client.status = "closed"  # close() returns at once for a closed client (distributed's own check)
    with suppress(Exception):
        client._loop_runner.stop()


def make_executor(jobs: int | None = None, dask=None, timeout: float = DASK_SECONDS):
    if dask is not None:
        return DaskExecutor(check_dask_address(dask) if isinstance(dask, str) else dask, timeout)
    if jobs == 1:
        return SerialExecutor()
    return PoolExecutor(jobs)
