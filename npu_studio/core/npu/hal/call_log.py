"""The plugin's call log, read while the NPU run goes on: which dispatch is running, and since when.

Both NPU models write it, in one format: the C interpreter through
$NPU_STUDIO_NPU_LOG (plugin_src/npu_plugin.c), the functional simulator
behind the in-process handler (`inprocess`) into the same file.

    CALL <tab> DISPATCH <tab> begin               as a call starts
    CALL <tab> DISPATCH <tab> TILES <tab> SECONDS  when it ends

The NPU runs one dispatch at a time, so the call in flight is the last
line when it is a `begin`. `CallWatch` is the `watch` of
`processes.run_child`: it stops the run when the call in flight has run
longer than its dispatch's limit (`time_budget`), and words a time-out as
one line naming the dispatch.
"""

from __future__ import annotations

import time
from pathlib import Path

from ...run import time_budget
from ...units import format_bytes
from ..program.npu_ir import NpuProgram

BEGIN = "begin"


def begin_line(call: int, dispatch: int) -> str:
    return f"{call}\t{dispatch}\t{BEGIN}\n"


def end_line(call: int, dispatch: int, tiles: int, seconds: float) -> str:
    return f"{call}\t{dispatch}\t{tiles}\t{seconds:.9f}\n"


def finished(text: str) -> list[tuple[int, int, int, float]]:
    """(call, dispatch, tiles, seconds) of every call that ended, in the order they ended."""
    out = []
    for line in text.splitlines():
        fields = line.split("\t")
        if len(fields) == 4:
            out.append((int(fields[0]), int(fields[1]), int(fields[2]), float(fields[3])))
    return out


class CallLimits:
    """Each NPU dispatch's limit for one call, from its work in the NPU program."""

    def __init__(self, program: NpuProgram):
        sizes = {b.id: b.size for b in program.buffers}
        self.symbols = {d.index: d.symbol for d in program.dispatches}
        self.work: dict[int, tuple[int, int, int]] = {}  # dispatch -> (flops, bytes, tiles)
        for d in program.dispatches:
            nbytes = sum(sizes.get(b, 0) for b in (*d.inputs, *d.outputs)) + d.transfer_read
            self.work[d.index] = (d.flops, nbytes, d.num_tiles)

    def seconds(self, dispatch: int) -> float:
        return time_budget.npu_call_seconds(*self.work.get(dispatch, (0, 0, 1)))

    def total(self, dispatches) -> float:
        return sum(self.seconds(d) for d in dispatches)

    def run_seconds(self, variant, parameters: Path | None, inputs) -> float:
        """The limit on a whole run of the NPU variant: IREE's part from the bytes of module,
        parameters and inputs, and each NPU dispatch's limit twice (computed, then checked
        against IREE's CPU build of it)."""
        nbytes = time_budget.file_bytes(variant.vmfb, parameters) + time_budget.array_bytes(inputs)
        return time_budget.iree_run_seconds(nbytes) + 2 * self.total(d for r in variant.imports for d in r.dispatches)

    def name(self, dispatch: int) -> str:
        symbol = self.symbols.get(dispatch, "")
        return f"dispatch #{dispatch}{' ' + symbol if symbol else ''}"

    def describe(self, dispatch: int) -> str:
        flops, nbytes, tiles = self.work.get(dispatch, (0, 0, 1))
        return f"{flops:,} FLOP, {format_bytes(nbytes)}, {tiles} tile{'s' if tiles != 1 else ''}"


class CallWatch:
    """Reads the call log as it grows (see the module doc); callable as run_child's `watch`."""

    def __init__(self, log: Path, limits: CallLimits, clock=time.monotonic):
        self.log, self.limits, self.clock = Path(log), limits, clock
        self._offset = 0
        self._partial = ""
        self.running: int | None = None  # the dispatch of the call in flight
        self.last_finished: int | None = None
        self._since = 0.0

    def _read(self) -> None:
        try:
            with open(self.log, "rb") as f:
                f.seek(self._offset)
                data = f.read()
        except FileNotFoundError:
            return
        self._offset += len(data)
        text = self._partial + data.decode(errors="replace")
        *lines, self._partial = text.split("\n")
        for line in lines:
            fields = line.split("\t")
            if len(fields) == 3 and fields[2] == BEGIN:
                self.running, self._since = int(fields[1]), self.clock()
            elif len(fields) == 4:
                self.running, self.last_finished = None, int(fields[1])

    def __call__(self) -> str | None:
        self._read()
        if self.running is None:
            return None
        limit = self.limits.seconds(self.running)
        if self.clock() - self._since <= limit:
            return None
        return (f"{self.limits.name(self.running)}: no result from the NPU model within "
                f"{time_budget.seconds_text(limit)} (its limit for {self.limits.describe(self.running)}); stopped")

    def timed_out(self, seconds: float, what: str) -> str:
        """The line for `what` overrunning its overall limit of `seconds`."""
        self._read()
        where = (f"while {self.limits.name(self.running)} ran on the NPU model" if self.running is not None
                 else f"after {self.limits.name(self.last_finished)}, the last NPU dispatch to finish"
                 if self.last_finished is not None else "before any NPU dispatch ran")
        return f"{what} did not finish within {time_budget.seconds_text(seconds)}; stopped {where}"
