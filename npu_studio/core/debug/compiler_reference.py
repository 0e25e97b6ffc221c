"""A second reference for the numerics trace: the compiler's own dispatch, run on the same inputs.

A dispatch with no ONNX counterpart (the first half of a split LayerNorm,
a copy of a buffer written in pieces, a constant computed inside an
initializer) cannot be judged against onnxruntime. When the traced build
is not the compiler's own (the flow snapshot was edited, or executables
are substituted), the compiler's own build of that dispatch still can be:
the dispatch module of the compiler's flow (the kept original of an edited
flow, `workspace/edit_state`, without substitutions) is built once and
cached in the workspace, and each dispatch runs there on the very inputs
the traced build gave it. Its result departs, by the one tolerance rule
(`run/tolerance`, the dispatch's own arithmetic only: both sides read the
same inputs), or agrees; the trace's unchanged localization rule does the
rest.

The sites of the two flows are matched by position only when that is
provably the same dispatch: as many sites, and at each the same operand,
result and tied-operand types. Otherwise the reference is unavailable and
`CompilerReference.reason` says why. A clean workspace needs none.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from iree.compiler import ir

from ..errors import StudioError
from ..ir.context import mlir_context
from ..run.dispatches import iree_dispatches
from ..run.tolerance import Tolerance, arithmetic_tolerance, dispatch_types, max_error
from ..textio import read_text
from ..workspace import edit_state, variants
from ..workspace.workspace import Workspace
from .trace_report import first_differing

CACHE_DIR = iree_dispatches.CACHE_DIR + "/compiler"  # beside the traced build's own dispatch module


@dataclass(frozen=True)
class Judgement:
    """One dispatch's result against the compiler's own dispatch on the same inputs."""

    dispatch: int  # the compiler's site
    max_abs_error: float
    scale: float
    rule: Tolerance
    departs: bool
    outside: int  # elements outside the bound
    first_differing: list[dict]  # the first few of them ({"index", "iree", "onnx"}: ours, the compiler's)


def site_signatures(flow_text: str) -> list[tuple]:
    """Per `flow.dispatch` site, in the trace's numbering (host pre-order): its operand types, result
    types and tied operands: what must match for two sites to be the same dispatch."""
    ctx = mlir_context()
    module = ir.Module.parse(flow_text, ctx)
    out: list[tuple] = []

    def walk(op: ir.Operation) -> None:
        if op.name == "flow.dispatch":
            tied = [ir.IntegerAttr(a).value for a in ir.ArrayAttr(op.attributes["tied_operands"])] \
                if "tied_operands" in op.attributes else []
            out.append((tuple(str(v.type) for v in op.operands), tuple(str(r.type) for r in op.results),
                        tuple(tied)))
        for region in op.regions:
            for block in region.blocks:
                for inner in block.operations:
                    walk(inner.operation)

    for op in module.body.operations:
        if op.operation.name != "flow.executable":
            walk(op.operation)
    return out


def site_mismatch(traced: str, original: str) -> str:
    """Why the sites of flow texts `traced` and `original` cannot be matched one to one ("" when they can)."""
    a, b = site_signatures(traced), site_signatures(original)
    if len(a) != len(b):
        return f"the edited flow has {len(a)} dispatch sites, the compiler's {len(b)}"
    for k, (x, y) in enumerate(zip(a, b)):
        for what, i in (("operand", 0), ("result", 1), ("tied-operand", 2)):
            if x[i] != y[i]:
                return f"dispatch #{k} has other {what} types than the compiler's #{k}"
    return ""


def why_needed(ws: Workspace, b: variants.Build, substituted: list[str]) -> str:
    """Why the traced build is not the compiler's own ("" when it is: no second reference needed)."""
    if b.name != variants.MAIN:
        return ""
    why = []
    if edit_state.original_path(ws, "flow").is_file() and edit_state.is_edited(ws, "flow"):
        why.append("the flow was edited")
    if substituted:
        why.append(", ".join(substituted) + " substituted")
    return " and ".join(why)


class CompilerReference:
    """The compiler's own dispatch module, running beside the trace (a context manager).

    `available`: it can judge; else `reason` says why not (one line). `why` says what makes the
    traced build differ from the compiler's. Build failures become the reason, never an error:
    the trace runs on without this reference.
    """

    def __init__(self, ws: Workspace, b: variants.Build, substituted: list[str]):
        self.why = why_needed(ws, b, substituted)
        self.reason = "" if self.why else "the build is the compiler's own"
        self._runner: iree_dispatches.DispatchRunner | None = None
        self.judgements: dict[int, Judgement | str] = {}  # dispatch -> its judgement, or why there is none
        self.build_seconds = 0.0
        self._started = False
        if not self.why:
            return
        flow = b.snapshot_path("flow")
        original = edit_state.compiler_text_path(ws, "flow")
        try:
            traced_text, original_text = read_text(flow), read_text(original)
            if traced_text != original_text:
                self.reason = site_mismatch(traced_text, original_text)
            if not self.reason:
                t0 = time.perf_counter()
                vmfb = iree_dispatches.build(original, b.folder / CACHE_DIR, ws.manifest.target, root=ws.root)
                self.build_seconds = time.perf_counter() - t0
                self._runner = iree_dispatches.DispatchRunner(vmfb)
                self._started = True
        except StudioError as exc:
            self.reason = f"the compiler's own dispatch module is not available: {exc.reason}"
        except (ValueError, ir.MLIRError) as exc:  # an edited flow the sites cannot be read from
            self.reason = f"the sites of the two flows cannot be matched: {str(exc).splitlines()[0]}"

    @property
    def available(self) -> bool:
        """The compiler's own dispatch module was built and started (it may be closed since)."""
        return self._started

    def judge(self, index: int, rec, arrays: list[np.ndarray], results: list[np.ndarray]) -> Judgement | str:
        """Dispatch `index`'s `results` against the compiler's own dispatch `index` on `arrays` (the
        tensor arguments the traced build gave it); a string: why it could not be run. Kept in
        `judgements`."""
        self.judgements[index] = found = self._judge(index, rec, arrays, results)
        return found

    def _judge(self, index: int, rec, arrays: list[np.ndarray], results: list[np.ndarray]) -> Judgement | str:
        if self._runner is None:
            return self.reason
        try:
            own = self._runner.run(index, arrays)
        except StudioError as exc:
            return exc.reason
        if len(own) != len(results):
            return f"the compiler's #{index} has {len(own)} results, this one {len(results)}"
        worst = None
        for mine, theirs in zip(results, own):
            mine, theirs = np.asarray(mine), np.asarray(theirs)
            if mine.shape != theirs.shape:
                return f"the compiler's #{index} gives shape {list(theirs.shape)}, this one {list(mine.shape)}"
            err, scale = max_error(mine, theirs)  # a fill (-FLT_MAX padding) is no scale: run/tolerance
            rule = arithmetic_tolerance(dispatch_types(rec), mine.dtype)  # same inputs: its own arithmetic only
            bound = rule.bound(scale)
            excess = err / bound if bound else (0.0 if err == 0 else float("inf"))
            if worst is None or excess > worst[0]:
                worst = (excess, Judgement(index, err, scale, rule, err > bound,
                                           *first_differing(mine, theirs, bound)))
        return worst[1] if worst else f"dispatch #{index} has no result"

    def close(self) -> None:
        if self._runner is not None:
            self._runner.close()
            self._runner = None

    def __enter__(self) -> "CompilerReference":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

