"""The timing simulator's event loop in C (native/event_loop.c), built once into the user cache.

The Python loop (timing._event_loop) spends about 5 us per step on a 100,000-task program; the same
loop in C, over the same int64 columns, takes a tenth of that. Both take the same steps in the same
order, so they give the same timeline bit for bit (tests/core/npu/sim/test_sim_native.py checks it on
random programs). The library is built like the NPU plugin (hal/plugin_build.py): named by a hash
of its source and flags, compiled to a temporary name and renamed into place. Without a C compiler,
with NPU_STUDIO_SIM_NATIVE=0, or where an int64 could overflow, `run_native` returns None and the
Python loop runs.
"""

from __future__ import annotations

import ctypes
import hashlib
import logging
import os
import tempfile
import threading
from pathlib import Path

from ... import lazy_import
from ...paths import cache_dir
from .plan import Plan, inverse

np = lazy_import.lazy_module("numpy")

SOURCE = Path(__file__).parent / "native" / "event_loop.c"
CFLAGS = ("-O2", "-std=c11", "-shared", "-fPIC", "-Wall")
ENV_SWITCH = "NPU_STUDIO_SIM_NATIVE"  # "0": always the Python loop
_INT64_ROOM = 1 << 62
_MAX_CHANNELS = 64  # the C pool's size

_lock = threading.Lock()
_library: ctypes.CDLL | None = None
_tried = False
log = logging.getLogger(__name__)


def library_path() -> Path:
    h = hashlib.sha256(SOURCE.read_bytes() + " ".join(CFLAGS).encode()).hexdigest()[:16]
    return cache_dir() / "sim" / h / "npu_sim_loop.so"


def _build(dest: Path) -> None:
    from ...processes import find_cc, run_child

    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".build-", suffix=".so", dir=dest.parent)
    os.close(fd)
    try:
        done = run_child([find_cc(), *CFLAGS, "-o", tmp, str(SOURCE)], timeout=120, log_level=logging.DEBUG)
        if done.returncode != 0:
            raise OSError(done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "cc failed")
        os.replace(tmp, dest)
    finally:
        Path(tmp).unlink(missing_ok=True)


def library() -> ctypes.CDLL | None:
    """The loaded library (built now if missing), or None: no compiler, or switched off."""
    global _library, _tried
    if os.environ.get(ENV_SWITCH) == "0":
        return None
    with _lock:
        if not _tried:
            _tried = True
            path = library_path()
            try:
                if not path.is_file():
                    _build(path)
                lib = ctypes.CDLL(str(path))
                lib.npu_sim_event_loop.restype = ctypes.c_int
                lib.npu_sim_cause_chain.restype = ctypes.c_int64
                _library = lib
            except Exception as exc:  # noqa: BLE001 (no compiler, a failed build or load: the Python loop runs)
                log.debug("timing simulator: the C loop is not available (%s); the Python loop runs", exc)
        return _library


def _csr(lists_len: int, owners, values):
    """first[i]..first[i+1] index the values owned by i, given (owner, value) pairs in owner order."""
    first = np.zeros(lists_len + 1, dtype=np.int64)
    np.cumsum(np.bincount(owners, minlength=lists_len), out=first[1:])
    return first, np.ascontiguousarray(values, dtype=np.int64)


def _ptr(a):
    assert a.dtype == np.int64 and a.flags.c_contiguous  # the C side reads int64 rows, and writes into some
    return a.ctypes.data_as(ctypes.POINTER(ctypes.c_int64))


def cause_chain(cause: np.ndarray, s: int) -> np.ndarray | None:
    """Steps s, cause[s], cause[cause[s]], ... down to one nothing released (-1 not included), or None
    without the library."""
    lib = library()
    if lib is None:
        return None
    cause = np.ascontiguousarray(cause, dtype=np.int64)
    out = np.empty(len(cause), dtype=np.int64)
    n = lib.npu_sim_cause_chain(_ptr(cause), ctypes.c_int64(len(cause)), ctypes.c_int64(s), _ptr(out))
    return out[:n]


def run_native(plan: Plan, cols):
    """(start, end, cause, alloc, free) int64 arrays from the C loop (timing.Timeline's fields), or None
    when the Python loop must run (see the module doc)."""
    n_steps, n_buffers = cols.n_steps, len(plan.buffers)
    if not isinstance(cols.bw, int) or cols.n_dma > _MAX_CHANNELS or not n_steps:
        return None
    dma = cols.code >= n_steps
    # every time and every DMA level stays below the sum of these (timing.py's pool argument)
    bound = int(cols.delay.sum()) + int(plan.step_work[dma].sum()) * cols.scale + (cols.bw + 2) * (n_steps + 1)
    if bound >= _INT64_ROOM or int(plan.step_work.max()) * cols.scale >= _INT64_ROOM:
        return None
    lib = library()
    if lib is None:
        return None
    order = np.asarray(plan.order, dtype=np.int64)
    ready = np.ascontiguousarray(order[cols.task_waiting[order] == 0])
    sb_first, sb_flat = _csr(n_steps, plan.touch_step, plan.touch_buffer)
    by_buffer = plan.touch_by_buffer
    bs_first, bs_flat = _csr(n_buffers, plan.touch_buffer[by_buffer], plan.touch_step[by_buffer])
    _, items, keys = inverse(plan.buffer_preds, n_buffers)  # buffer `items` reuses the addresses of `keys`
    by_pred = np.argsort(keys, kind="stable")
    succ_first, succ_flat = _csr(n_buffers, keys[by_pred], items[by_pred])
    mutable = {name: np.array(getattr(cols, name), dtype=np.int64) for name in (
        "wait", "group_left", "task_waiting", "buf_waiting")}
    buf_left = np.diff(bs_first)
    start = np.full(n_steps, -1, dtype=np.int64)
    end, cause = start.copy(), start.copy()
    alloc = np.where(mutable["buf_waiting"] > 0, -1, 0).astype(np.int64)
    free_at = np.full(n_buffers, -1, dtype=np.int64)

    inputs = [np.ascontiguousarray(a, dtype=np.int64) for a in (
        cols.delay, cols.code, plan.step_work, mutable["wait"], start, end, cause, cols.next_on_engine,
        plan.group_of_step, cols.group_first, mutable["group_left"], cols.group_next, cols.task_group,
        mutable["task_waiting"], cols.dependents, cols.dep_first)]
    buffers = [sb_first, sb_flat, buf_left, mutable["buf_waiting"], succ_first, succ_flat, bs_first, bs_flat,
               alloc, free_at]
    status = lib.npu_sim_event_loop(
        ctypes.c_int64(n_steps), ctypes.c_int64(cols.n_dma), ctypes.c_int64(cols.scale), ctypes.c_int64(cols.bw),
        *map(_ptr, inputs), _ptr(ready), ctypes.c_int64(len(ready)), *map(_ptr, buffers))
    if status != 0:
        return None
    return start, end, cause, alloc, free_at
