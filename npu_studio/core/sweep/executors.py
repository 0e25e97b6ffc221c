"""Where a sweep's batches run: in this process, a local process pool, or a Dask cluster.

One interface: `run(models, batches)` yields each batch's rows as it
completes (any order); `cancel()` drops the batches not started; `close()`
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
from collections.abc import Iterator
from concurrent import futures

from ..processes import die_with_parent
from .evaluate import evaluate_batch
from .spec import SweepError

Batch = tuple[str, list]  # (model hash, [(cache key, target), ...])
Rows = list[tuple[str, dict]]

_models: dict[str, str] = {}  # a pool worker's flow texts, by hash


def _init_worker(parent: int, models: dict[str, str]) -> None:
    die_with_parent(parent)
    _models.update(models)


def _run_in_worker(model_hash: str, batch: list) -> Rows:
    return evaluate_batch(model_hash, _models[model_hash], batch)


def _run_on_dask(flow_text: str, model_hash: str, batch: list) -> Rows:
    return evaluate_batch(model_hash, flow_text, batch)


class SerialExecutor:
    """Everything in this process, batch after batch (one worker)."""

    workers = 1

    def __init__(self):
        self._cancelled = False

    def run(self, models: dict[str, str], batches: list[Batch]) -> Iterator[Rows]:
        for model_hash, batch in batches:
            if self._cancelled:
                return
            yield evaluate_batch(model_hash, models[model_hash], batch)

    def cancel(self) -> None:
        self._cancelled = True

    def close(self) -> None:
        pass


class PoolExecutor:
    """A local process pool of `jobs` workers (default: every core)."""

    def __init__(self, jobs: int | None = None):
        self.workers = jobs or os.cpu_count() or 1
        self._pool: futures.ProcessPoolExecutor | None = None
        self._pending: list[futures.Future] = []

    def run(self, models: dict[str, str], batches: list[Batch]) -> Iterator[Rows]:
        self._pool = futures.ProcessPoolExecutor(
            max_workers=self.workers, mp_context=multiprocessing.get_context("spawn"),
            initializer=_init_worker, initargs=(os.getpid(), models))
        self._pending = [self._pool.submit(_run_in_worker, h, b) for h, b in batches]
        for f in futures.as_completed(self._pending):
            if f.cancelled():
                continue
            yield f.result()

    def cancel(self) -> None:
        for f in self._pending:
            f.cancel()

    def close(self) -> None:
        if self._pool is not None:
            self.cancel()
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None


class DaskExecutor:
    """A Dask cluster through `distributed`: an address, or a Client/LocalCluster given by tests."""

    def __init__(self, address, timeout: float = 10.0):
        try:
            from distributed import Client
        except ImportError:  # an install without the optional dependency
            raise SweepError(None, "--dask needs the 'distributed' package (pip install "
                             "'dask[distributed]')") from None
        self._own = not hasattr(address, "submit")
        if self._own:
            try:
                self.client = Client(address, timeout=timeout, set_as_default=False)
            except (OSError, TimeoutError, ValueError) as e:
                raise SweepError(None, f"cannot reach the Dask scheduler at {address}: "
                                 f"{str(e).splitlines()[0] if str(e) else type(e).__name__}") from None
        else:
            self.client = address
        self.workers = max(len(self.client.scheduler_info().get("workers", {})), 1)
        self._pending = []

    def run(self, models: dict[str, str], batches: list[Batch]) -> Iterator[Rows]:
        from distributed import as_completed

        scattered = self.client.scatter(models, broadcast=True)  # once per worker, by hash
        self._pending = [self.client.submit(_run_on_dask, scattered[h], h, b, pure=False)
                         for h, b in batches]
        for f in as_completed(self._pending):
            if f.cancelled():
                continue
            yield f.result()

    def cancel(self) -> None:
        if self._pending:
            self.client.cancel(self._pending)

    def close(self) -> None:
        self.cancel()
        if self._own:
            self.client.close()


def make_executor(jobs: int | None = None, dask=None):
    if dask is not None:
        return DaskExecutor(dask)
    if jobs == 1:
        return SerialExecutor()
    return PoolExecutor(jobs)
