"""Each plugin call checked against IREE's CPU build of its dispatch on the same operands.

The C interpreter's calls come from its call log (`call_log`) and the
bindings it kept before and after each call ($NPU_STUDIO_NPU_DUMP): in
standalone mode, and for the calls made while IREE loads a module in the
in-process mode (`inprocess`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ...run.dispatches.scalar_ops import numpy_dtype
from . import call_log
from .exec_desc import ExecProgram
from .variant import Variant


def compare_calls(dispatch_vmfb: Path, records: list[dict], arrays) -> None:
    """Sets each record's max_error and scale: its results against IREE's CPU build of its dispatch
    on the same operands. `arrays(k)` gives call k's (operands, results)."""
    from ..numerics.functional_sim import max_error
    from ...run.dispatches.iree_dispatches import DispatchRunner

    with DispatchRunner(Path(dispatch_vmfb)) as runner:
        for k, record in enumerate(records):
            operands, ours = arrays(k)
            err, scale = 0.0, 0.0
            for a, r in zip(ours, runner.run(record["dispatch"], operands)):
                e, s = max_error(a, r)
                err, scale = max(err, e), max(scale, s)
            record["max_error"], record["scale"] = err, scale


def records_from_log(variant: Variant, described: ExecProgram, log: Path) -> list[dict]:
    """One record per call the C interpreter finished, as `compare_calls` takes them."""
    records = []
    for call, dispatch, tiles, seconds in call_log.finished(log.read_text(encoding="utf-8") if log.is_file() else ""):
        rec = variant.import_of(dispatch)
        d = described.of(dispatch)
        records.append({"call": call, "dispatch": dispatch, "symbol": d.symbol if d else "",
                        "tiles": tiles or 1, "seconds": seconds, "max_error": None, "scale": None,
                        "dtype": next((numpy_dtype(b.element).name for b in rec.bindings
                                       if b.access != "readonly"), "") if rec else ""})
    return records


def call_arrays(variant: Variant, dump: Path, record: dict):
    """(operands, results) of one kept call, as the dispatch's flow function takes and writes them."""
    rec = variant.import_of(record["dispatch"])
    operands, results = [], []
    for k, b in enumerate(rec.bindings):
        dtype = numpy_dtype(b.element)
        if b.access != "writeonly":
            operands.append(np.fromfile(dump / f"{record['call']}.pre{k}.bin", dtype).reshape(b.shape))
        if b.access != "readonly":
            results.append(np.fromfile(dump / f"{record['call']}.post{k}.bin", dtype).reshape(b.shape))
    return operands, results
