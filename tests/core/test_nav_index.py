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
from npu_studio.core.ir.default_folds import default_folds
from npu_studio.core.ir.mlir_text import blank_locations, line_offsets, op_end, op_position, parse_module
from npu_studio.core.ir.nav_describe import describe, loc_names, parsed_types
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


def index_uses_by_op(index: nav_index.NavIndex, op_lines: list[int], below: int | None = None) -> dict:
    """Our value uses, each given to the op that starts on its line or the last one above it."""
    import bisect

    out: dict[int, collections.Counter] = collections.defaultdict(collections.Counter)
    for e in index.entities:
        if e.kind != "value":
            continue
        for u in e.uses:
            if below is not None and u.line >= below:
                continue
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


# -- scoping, broken text, edits -------------------------------------------------------------------

TWO_FUNCTIONS = """\
func.func @f(%arg0: i32) -> i32 {
  %0 = arith.addi %arg0, %arg0 : i32
  cf.br ^bb1(%0 : i32)
^bb1(%1: i32):
  return %1 : i32
}
func.func @g(%arg0: i32) -> i32 {
  %0 = arith.muli %arg0, %arg0 : i32
  %1 = func.call @f(%0) : (i32) -> i32
  return %1 : i32
}
"""


def test_same_names_in_two_functions_are_two_values():
    index = nav_index.build(TWO_FUNCTIONS)
    uses_of_f0 = index.entity_at(2, 3)  # %0 of @f
    assert uses_of_f0.name == "%0" and [u.line for u in uses_of_f0.uses] == [3]
    g0 = index.entity_at(9, 20)  # the %0 passed to @f inside @g
    assert g0.definition.line == 8
    assert index.entity_at(3, 13).definition == nav_index.Span(2, 2, 4)
    assert index.entity_at(3, 9).kind == "label" and index.entity_at(3, 9).definition.line == 4
    assert index.entity_at(9, 17).definition.line == 1  # @f
    assert [u.line for u in index.entity_at(1, 10).uses] == [9]
    # the textual types match what MLIR says (hand-checked: all i32)
    assert parsed_types(TWO_FUNCTIONS)[(8, "%0")] == "i32"


def test_broken_text_still_resolves_what_it_can():
    """Lines cut from the middle of the example's flow phase: the parse fails, the index still
    resolves every use above the cut as MLIR's parse of the whole text does."""
    text = phases_of("example")["flow"].read_text(encoding="utf-8")
    truth = Truth(text)
    lines = text.split("\n")
    cut = next(i for i, l in enumerate(lines) if "flow.dispatch @" in l)
    broken = "\n".join(lines[:cut] + ["  %99 = garbage( {{ %0 ::", "}}}"] + lines[cut + 3:])
    with pytest.raises(Exception):
        parse_module(broken)
    index = nav_index.build(broken)
    above = {line: set(c) for line, c in truth.uses.items() if line < cut}
    ours = index_uses_by_op(index, truth.op_lines, below=cut)
    assert above and all(set(ours.get(line, {})) == c for line, c in above.items())
    # the garbage line's own use of %0 resolves to a %0 defined above it in the same function
    use = index.entity_at(cut + 1, "  %99 = garbage( {{ %0 ::".index("%0"))
    assert use is not None and use.definition is not None and use.definition.line < cut + 1
    assert nav_index.build("%1 = foo %0 : i32\n}}}}\n{").entities[0].definition is not None  # never raises


def test_an_edit_rescans_only_the_edited_line():
    text = phases_of("resnet50")["flow"].read_text(encoding="utf-8")
    cache = LineCache()
    nav_index.build(text, cache)
    scanned = cache.scanned
    lines = text.split("\n")
    k = next(i for i, l in enumerate(lines) if l.strip().startswith("%1 = "))
    lines[k] = lines[k].replace("%1 = ", "%renamed = ", 1)
    edited = "\n".join(lines)
    incremental = nav_index.build(edited, cache)
    assert cache.scanned - scanned == 1
    fresh = nav_index.build(edited)
    assert [(e.kind, e.name, e.definition, e.uses) for e in incremental.entities] == [
        (e.kind, e.name, e.definition, e.uses) for e in fresh.entities]
    assert incremental.entity_at(k + 1, lines[k].index("%renamed")).name == "%renamed"


# -- aliases, blobs, outline, folds ----------------------------------------------------------------

def test_location_alias_names_the_onnx_node():
    import onnx

    text = phases_of("example")["input"].read_text(encoding="utf-8")
    index = nav_index.build(text)
    nodes = {n.name for n in onnx.load(str(EXAMPLE)).graph.node}
    conv_line = next(i for i, l in enumerate(index.lines, 1) if "linalg.conv_2d" in l)
    alias = index.lines[conv_line - 1].rsplit("loc(", 1)[1].rstrip(")")
    entity = index.entity_at(conv_line, index.lines[conv_line - 1].rindex(alias))
    assert entity.kind == "alias" and entity.definition.line != conv_line
    assert loc_names(index, alias) == ["Conv_0"] and "Conv_0" in nodes
    assert "ONNX node Conv_0" in describe(index, entity)


def test_dense_resource_goes_to_its_blob():
    text = ('func.func @f() -> tensor<2xf32> {\n'
            '  %0 = arith.constant dense_resource<blob_1> : tensor<2xf32>\n'
            '  return %0 : tensor<2xf32>\n}\n'
            '{-#\n  dialect_resources: {\n    builtin: {\n'
            '      blob_1: "0x040000000000803F00000040"\n    }\n  }\n#-}\n')
    parse_module(text)  # MLIR accepts it
    index = nav_index.build(text)
    use = index.entity_at(2, text.split("\n")[1].index("blob_1"))
    assert use.kind == "resource" and use.definition.line == 8
    assert "8 bytes" in describe(index, use)
    assert [f for f in index.folds if f.kind == "resources"] == [nav_index.FoldRange(5, 10, "resources", True)]


@pytest.mark.parametrize("model", ["example", "resnet50"])
def test_flow_phase_opens_on_code_not_on_location_aliases(model):
    text = phases_of(model)["flow"].read_text(encoding="utf-8")
    index = nav_index.build(text)
    hidden = set()
    for f in index.folds:
        if f.folded_by_default:
            hidden.update(range(f.start_line + 1, f.end_line + 1))
    shown = [i for i in range(1, len(index.lines) + 1) if i not in hidden]
    loc_lines = [i for i, l in enumerate(index.lines, 1) if l.startswith("#loc")]
    assert len([i for i in loc_lines if i not in hidden]) <= 3  # one line per run of aliases
    module_line = next(i for i, l in enumerate(index.lines, 1) if l.startswith("module"))
    other_aliases = sum(1 for l in index.lines[:module_line] if l.startswith("#") and not l.startswith("#loc"))
    assert shown.index(module_line) <= other_aliases + 3


def test_outline_holds_functions_executables_and_dispatches():
    text = phases_of("resnet50")["flow"].read_text(encoding="utf-8")
    index = nav_index.build(text)
    kinds = collections.Counter(o.kind for o in index.outline)
    n_exec = sum(1 for l in index.lines if l.startswith("  flow.executable "))
    n_dispatch = sum(1 for l in index.lines if " flow.dispatch @" in l)
    assert kinds["executable"] == n_exec and kinds["dispatch"] == n_dispatch
    site = next(o for o in index.outline if o.kind == "dispatch")
    inner = index.outline_at(site.start_line)
    assert inner == site and site.name.split()[-1].startswith("@resnet50$async_dispatch_")


@pytest.mark.parametrize("phase", ["flow", "executable-targets"])
def test_the_quick_default_folds_are_the_index_s(phase):
    text = phases_of("example")[phase].read_text(encoding="utf-8")
    index = nav_index.build(text)
    quick = default_folds(text)
    assert quick and quick == [f for f in index.folds if f.folded_by_default]


@pytest.mark.parametrize("phase", ["flow", "stream", "executable-targets", "vm"])
def test_the_scanner_finds_the_names_the_lexer_finds(phase):
    """nav_scan's one-pass regex against the highlighter's lexer (`lex_line`), name by name."""
    from pygments.token import Name

    from npu_studio.core.ir.mlir_lexer import STATE_ROOT, end_state, lex_line
    from npu_studio.core.ir.nav_scan import _TOKENS

    state = STATE_ROOT
    for line in phases_of("example")[phase].read_text(encoding="utf-8").split("\n"):
        if state == STATE_ROOT and "{-#" not in line:
            lexed = {(s, line[s:s + n]) for s, n, t in lex_line(line)[0]
                     if t in (Name.Variable, Name.Label, Name.Constant)}
            scanned = {(m.start(), m.group()) for m in _TOKENS.finditer(line)
                       if m.lastgroup in ("value", "label", "symbol")}
            assert scanned == lexed, line
        state = end_state(line, state)


def test_split_lines_in_chunks_is_str_split(monkeypatch):
    """The builder splits a big text a chunk at a time (the GIL is let go between chunks): the lines are
    those of str.split, wherever the chunk boundaries fall (at, before or after a newline)."""
    import random

    from npu_studio.core.ir import nav_index

    monkeypatch.setattr(nav_index, "SPLIT_CHUNK", 5)
    rng = random.Random(40)
    pauses = []
    for _ in range(2000):
        text = "".join(rng.choice("ab\n") for _ in range(rng.randint(0, 30)))
        assert nav_index.split_lines(text, lambda: pauses.append(1)) == text.split("\n"), repr(text)
    assert pauses  # the builder's pause is offered between chunks
