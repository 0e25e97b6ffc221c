"""The navigation index against MLIR's own parse of every phase of two real compiles, and on broken text.

Truth: `iree.compiler.ir` parses the positions copy of a snapshot (`mlir_text.blank_locations`: locations
blanked, so every op and block argument carries its line and column); each SSA value's defining line
and each operand's defining line come from the parse, symbol definitions from the ops' `sym_name`,
and region ends from the parser's op positions (`mlir_text.op_end`).
"""

from __future__ import annotations

import collections
from pathlib import Path

import pytest

from npu_studio.core.compile.phases import SNAPSHOT_PHASES
from npu_studio.core.ir import nav_index
from npu_studio.core.ir.mlir_text import blank_locations, line_offsets, op_end, op_position, parse_module
from npu_studio.core.ir.nav_describe import describe, loc_names
from npu_studio.core.ir.nav_scan import LineCache
from tests.conftest import EXAMPLE
from tests.zoo_cache import cached_workspace, zoo_workspace

PHASES = [p for p in SNAPSHOT_PHASES if p != "start"]


def phases_of(model: str) -> dict[str, Path]:
    ws = (cached_workspace("single_conv", lambda folder: EXAMPLE, group="zoo") if model == "example"
          else zoo_workspace(model))
    return ws.snapshots()


class Truth:
    """Definitions and uses from the parse: {(line, name)} and {op line: Counter((name, def line))}."""

    def __init__(self, text: str):
        from iree.compiler import ir

        positions = blank_locations(text)
        ctx, module = parse_module(positions)
        self.defs: set[tuple[int, str]] = set()
        self.uses: dict[int, collections.Counter] = collections.defaultdict(collections.Counter)
        self.symbols: set[tuple[int, str]] = set()
        self.op_lines: list[int] = []
        self.executables: dict[int, int] = {}  # start line -> end line
        offsets = line_offsets(positions)
        with ctx:
            state = ir.AsmState(module.operation)
            def_line: dict = {}

            def name(v) -> str:
                return v.get_name(state).split("#")[0]

            def visit(op):
                pos = op_position(op)
                if pos is None:
                    return ir.WalkResult.ADVANCE
                line = pos[0]
                self.op_lines.append(line)
                for r in op.results:
                    def_line[r] = line
                    self.defs.add((line, name(r)))
                for region in op.regions:
                    for block in region.blocks:
                        for a in block.arguments:
                            loc = a.location
                            if "unknown" in str(loc):
                                continue  # an implicit argument (linalg.fill's body): not in the text
                            loc = ir.FileLineColLoc(loc)
                            arg_line = loc.start_line
                            at = offsets[arg_line - 1] + loc.start_col - 1
                            if not positions.startswith(name(a), at):
                                continue  # a body the op does not print (linalg.broadcast's): not in the text
                            def_line[a] = arg_line
                            self.defs.add((arg_line, name(a)))
                if "sym_name" in op.attributes:
                    self.symbols.add((line, "@" + str(op.attributes["sym_name"]).strip('"')))
                if op.name in ("hal.executable", "flow.executable", "stream.executable"):
                    self.executables[line] = op_end(positions, offsets, *pos)[0]
                self._pending_operands.append((line, list(op.operands)))
                return ir.WalkResult.ADVANCE

            self._pending_operands: list = []
            module.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
            for line, operands in self._pending_operands:
                for v in operands:
                    if v in def_line:
                        self.uses[line][(name(v), def_line[v])] += 1
        self.op_lines.sort()


def index_uses_by_op(index: nav_index.NavIndex, op_lines: list[int]) -> dict[int, collections.Counter]:
    """Our value uses, each given to the op that starts on its line or the last one above it."""
    import bisect

    out: dict[int, collections.Counter] = collections.defaultdict(collections.Counter)
    for e in index.entities:
        if e.kind != "value":
            continue
        for u in e.uses:
            k = bisect.bisect_right(op_lines, u.line) - 1
            owner = op_lines[k] if k >= 0 else u.line
            out[owner][(e.name, e.definition.line if e.definition else None)] += 1
    return out


def check_against_parse(text: str) -> None:
    truth = Truth(text)
    index = nav_index.build(text)
    ours = {(e.definition.line, e.name) for e in index.entities if e.kind == "value" and e.definition}
    assert truth.defs - ours == set(), "definitions the index missed"
    assert ours - truth.defs == set(), "definitions the index made up"
    # Sets per op, not counts: `flow.dispatch ... -> %2` names its tied operand twice in the text.
    uses = {line: set(c) for line, c in index_uses_by_op(index, truth.op_lines).items()}
    wrong = {line: (uses.get(line, set()), set(c)) for line, c in truth.uses.items() if uses.get(line, set()) != set(c)}
    wrong.update({line: (c, set()) for line, c in uses.items() if line not in truth.uses and c})
    assert not wrong, f"uses that resolve elsewhere than the parse says (line: (index, parse)): {dict(list(wrong.items())[:5])}"
    syms = {(e.definition.line, e.name) for e in index.symbols()}
    assert truth.symbols <= syms, f"symbols missed: {sorted(truth.symbols - syms)[:5]}"
    outline = {(o.start_line, o.end_line) for o in index.outline if o.kind == "executable"}
    assert set(truth.executables.items()) == outline


@pytest.mark.parametrize("phase", PHASES)
def test_example_phases_match_the_parse(phase):
    check_against_parse(phases_of("example")[phase].read_text(encoding="utf-8"))


@pytest.mark.slow
@pytest.mark.parametrize("phase", PHASES)
def test_resnet50_phases_match_the_parse(phase):
    check_against_parse(phases_of("resnet50")[phase].read_text(encoding="utf-8"))
