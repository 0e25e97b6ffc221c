"""What the IR view's hover says about a name of the navigation index (no Qt).

A value: its type and the op that defines it. The type is MLIR's own when the text parses
(`parsed_types`, run off the GUI thread with the index); otherwise it is read from the definition's
text (the result types after the op's last top-level `:` and `->`, or an argument's declared type)
and marked "as printed", since some ops print their operands' type (a comparison prints f32, gives i1). A location alias
(`#loc12`): the ONNX node names it stands for, following `fused[...]` and `callsite(...)` through
other aliases. Other names: their definition's line, shortened.
"""

from __future__ import annotations

import re

from . import nav_scan as S
from .nav_index import Entity, NavIndex

MAX_SHOWN = 160  # characters of a definition's line shown
_STRING = re.compile(r'"((?:\\.|[^"\\\n])*)"(:\d+(?::\d+)?)?')
_ALIAS = re.compile(r"#[A-Za-z_][\w$.\-]*")
_OPEN, _CLOSE = "<([{", ">)]}"


def _top_level(text: str):
    """(index, char) of the characters of `text` outside brackets and strings."""
    depth, i, n = 0, 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            j = text.find('"', i + 1)
            while j > 0 and text[j - 1] == "\\":
                j = text.find('"', j + 1)
            i = n if j < 0 else j + 1
            continue
        if c == "-" and text.startswith("->", i):
            if depth == 0:
                yield i, "->"
            i += 2
            continue
        if c in _OPEN:
            depth += 1
        elif c in _CLOSE:
            depth = max(0, depth - 1)
        elif depth == 0:
            yield i, c
        i += 1


def _split_top(text: str) -> list[str]:
    cuts = [i for i, c in _top_level(text) if c == ","]
    parts, start = [], 0
    for i in cuts:
        parts.append(text[start:i].strip())
        start = i + 1
    parts.append(text[start:].strip())
    return [p for p in parts if p]


def _strip_loc(text: str) -> str:
    for i, c in _top_level(text):
        if c == "l" and text.startswith("loc(", i) and (i == 0 or text[i - 1] == " "):
            return text[:i].rstrip()
    return text.rstrip()


def result_types(index: NavIndex, line: int) -> list[str] | None:
    """The result types printed for the op on `line` (after its region, if it has one)."""
    text = index.lines[line - 1]
    end = index.region_end.get(line)
    if end is not None:
        text = index.lines[end - 1].lstrip()[1:]  # `} -> tensor<...> loc(...)`
    text = _strip_loc(text)
    if end is not None:
        arrow = text.find("->")
        return _unwrap(text[arrow + 2:]) if arrow >= 0 else None
    colons = [i for i, c in _top_level(text) if c == ":" and text[i - 1:i + 2] == " : "]
    if not colons:
        return None
    tail = text[colons[-1] + 2:]
    arrows = [i for i, c in _top_level(tail) if c == "->"]
    if arrows:
        return _unwrap(tail[arrows[-1] + 2:])
    tail = tail.split(" = ")[0].split(" => ")[0]
    for word in (" into ", " to "):  # casts and reshapes: the result type comes last
        if word in tail:
            return _unwrap(tail[tail.rindex(word) + len(word):])
    return _unwrap(tail)


def _unwrap(text: str) -> list[str]:
    text = re.sub(r"\{[^{}]*\}", "", text).strip()  # `!stream.resource<*>{%size}`: the size is no type
    if text.startswith("(") and text.endswith(")"):
        text = text[1:-1]
    return _split_top(text)


def argument_type(index: NavIndex, entity: Entity) -> str | None:
    d = entity.definition
    text = index.lines[d.line - 1]
    rest = text[d.end:].lstrip()
    if not rest.startswith(":"):
        return None
    rest = rest[1:]
    for i, c in _top_level(rest):
        if c in ",)" or (c == "l" and rest.startswith("loc(", i)) or c == "{":
            return rest[:i].strip()
    return _strip_loc(rest).strip() or None


def value_type(index: NavIndex, entity: Entity) -> str | None:
    """The type of a value as its definition prints it; None when the text does not say."""
    d = entity.definition
    if d is None:
        return None
    if entity.role != "result":
        return argument_type(index, entity)
    types = result_types(index, d.line)
    if not types:
        return None
    names = [ev[1] for ev in index.facts[d.line - 1].events if ev[0] is S.DEF_HERE]
    if len(types) == len(names):
        return types[names.index(entity.name)]
    if len(names) == 1:
        return types[0] if len(types) == 1 else "(" + ", ".join(types) + ")"
    return None


def parsed_types(text: str) -> dict[tuple[int, str], str] | None:
    """{(definition line, %name): type} from MLIR's parse of `text`; None when it does not parse."""
    from .mlir_text import SnapshotParseError, blank_locations, op_position, parse_module

    try:
        ctx, module = parse_module(blank_locations(text))
    except SnapshotParseError:
        return None
    from iree.compiler import ir

    types: dict[tuple[int, str], str] = {}
    with ctx:
        state = ir.AsmState(module.operation)

        def visit(op):
            pos = op_position(op)
            if pos is not None:
                results = list(op.results)
                names = [r.get_name(state) for r in results]
                if len(results) > 1 and "#" in names[0]:  # `%0:2`: one name for a group of results
                    types[(pos[0], names[0].split("#")[0])] = "(" + ", ".join(str(r.type) for r in results) + ")"
                else:
                    for name, r in zip(names, results):
                        types[(pos[0], name)] = str(r.type)
                for region in op.regions:
                    for block in region.blocks:
                        for a in block.arguments:
                            loc = a.location
                            if "unknown" not in str(loc):
                                types.setdefault((ir.FileLineColLoc(loc).start_line, a.get_name(state)), str(a.type))
            return ir.WalkResult.ADVANCE

        module.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
    return types


def loc_names(index: NavIndex, alias: str, _seen: set | None = None) -> list[str]:
    """The names (ONNX nodes) in a location alias's definition, through the aliases it refers to."""
    seen = _seen if _seen is not None else set()
    if alias in seen:
        return []
    seen.add(alias)
    entity = next((e for _, _, e in _alias_occurrence(index, alias)), None)
    if entity is None or entity.definition is None:
        return []
    text = index.lines[entity.definition.line - 1]
    body = text[text.find("=") + 1:]
    names: list[str] = []
    for m in re.finditer(rf'{_STRING.pattern}|{_ALIAS.pattern}', body):
        if m.group().startswith("#"):
            names.extend(n for n in loc_names(index, m.group(), seen) if n not in names)
        elif m.group(2) is None and m.group(1) not in names:  # a file:line:col is no node
            names.append(m.group(1))
    return names


def _alias_occurrence(index: NavIndex, alias: str):
    for e in index.entities:
        if e.kind == "alias" and e.name == alias:
            yield None, None, e
            return


def describe(index: NavIndex, entity: Entity, types: dict | None = None) -> str:
    """The hover text of `entity` (plain text, a few lines); `types` from `parsed_types` when the text parses."""
    d = entity.definition
    if d is None:
        return f"{entity.name}: defined nowhere in this text ({len(entity.uses)} uses)"
    line_text = index.lines[d.line - 1].strip()
    shown = line_text if len(line_text) <= MAX_SHOWN else line_text[:MAX_SHOWN] + "…"
    uses = f"{len(entity.uses)} use{'s' if len(entity.uses) != 1 else ''}"
    if entity.kind == "value":
        vtype = types.get((d.line, entity.name)) if types is not None else None
        if vtype is None:
            vtype = value_type(index, entity)
            vtype = f"{vtype} (as printed)" if vtype else None
        op = index.facts[d.line - 1].op or "the op"
        role = {"result": f"result of {op}", "block argument": "block argument",
                "argument": f"argument of {op}"}.get(entity.role, entity.role)
        head = f"{entity.name}: {vtype}" if vtype else entity.name
        return f"{head}\n{role}, line {d.line} ({uses})\n{shown}"
    if entity.kind == "alias" and entity.name.startswith("#loc"):
        names = loc_names(index, entity.name)
        nodes = ("ONNX node " if len(names) == 1 else "ONNX nodes ") + ", ".join(names) if names else "no node name"
        return f"{entity.name}: {nodes}\nline {d.line} ({uses})\n{shown}"
    if entity.kind == "resource":
        blob = index.lines[d.line - 1]
        size = max(0, (len(blob.split('"0x', 1)[-1].rstrip().rstrip(",").rstrip('"')) - 8) // 2)
        return f"resource {entity.name}: {size:,} bytes\nline {d.line} ({uses})"
    return f"{entity.name}\nline {d.line} ({uses})\n{shown}"


def parsed_types_in_child(text: str, timeout: float = 120.0) -> dict[tuple[int, str], str] | None:
    """`parsed_types` in a child Python: MLIR's parse holds the GIL for seconds on a big snapshot,
    which would freeze the window if it ran on a thread of ours. None when the text does not parse."""
    import logging
    import subprocess
    import tempfile

    from ..processes import module_command, run_child

    with tempfile.TemporaryDirectory(prefix="npu-studio-types-") as folder:
        source = f"{folder}/text.mlir"
        with open(source, "w", encoding="utf-8") as f:
            f.write(text)
        try:
            # DEBUG: a helper of the view, not a tool the user ran; the Log dock shows INFO and up
            done = run_child([*module_command(__name__), source], timeout=timeout, log_level=logging.DEBUG)
        except (OSError, subprocess.TimeoutExpired):
            return None
    if done.returncode != 0 or not done.stdout.startswith("ok\n"):
        return None
    types = {}
    for row in done.stdout.splitlines()[1:]:  # a row at a time: no long C call holding the GIL
        line, name, vtype = row.split("\t", 2)
        types[(int(line), name)] = vtype
    return types


if __name__ == "__main__":  # the child of parsed_types_in_child: argv[1] is the text's file
    import sys

    with open(sys.argv[1], encoding="utf-8") as f:
        found = parsed_types(f.read())
    if found is not None:
        sys.stdout.write("ok\n" + "".join(f"{line}\t{name}\t{t}\n" for (line, name), t in found.items()))
