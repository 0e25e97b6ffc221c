"""Reading IREE's attributes: symbols, lowering configs, pipelines, targets, constants."""

from __future__ import annotations

from ...lazy_import import lazy_module

ir = lazy_module("iree.compiler.ir")  # loaded on first use: not at the app's start


def sym_name(op: ir.Operation) -> str | None:
    if "sym_name" in op.attributes:
        return ir.StringAttr(op.attributes["sym_name"]).value
    return None


def symbol_path(attr: ir.Attribute) -> list[str]:
    s = ir.SymbolRefAttr(attr)
    return list(s.value)


def tile_lists(text: str) -> dict[str, list[int]]:
    """`name = [1, 2, 3]` pairs at any nesting level of an attribute's text."""
    out: dict[str, list[int]] = {}
    i = 0
    while True:
        eq = text.find("= [", i)
        if eq < 0:
            return out
        close = text.find("]", eq)
        j = eq - 1
        while j >= 0 and text[j] == " ":
            j -= 1
        k = j
        while k >= 0 and (text[k].isalnum() or text[k] == "_"):
            k -= 1
        name = text[k + 1 : j + 1]
        items = [x.strip() for x in text[eq + 3 : close].split(",") if x.strip()]
        try:
            out[name] = [int(x.split(":")[0]) for x in items]
        except ValueError:
            pass
        i = close + 1


def pipeline_name(text: str) -> str | None:
    at = text.find("pipeline")
    if at < 0:
        return None
    rest = text[at + len("pipeline") :].lstrip(" =")
    lt = rest.find("<")
    if rest.startswith("#") and lt >= 0:
        end = rest.find(">", lt)
        return rest[lt + 1 : end]
    end = min([p for p in (rest.find(","), rest.find(">"), rest.find(" ")) if p >= 0] or [len(rest)])
    return rest[:end]


def const_int(v: ir.Value) -> int | None:
    owner = v.owner
    if isinstance(owner, ir.Block):
        return None
    if owner.name in ("arith.constant", "vm.const.i32", "vm.const.i64") and "value" in owner.attributes:
        try:
            return ir.IntegerAttr(owner.attributes["value"]).value
        except (TypeError, ValueError):
            return None
    return None


def target_name(variant: ir.Operation) -> str:
    text = str(variant.attributes["target"])
    # #hal.executable.target<"llvm-cpu", "embedded-elf-x86_64", {...}>
    parts = []
    i = 0
    while len(parts) < 2:
        q = text.find('"', i)
        if q < 0:
            break
        e = text.find('"', q + 1)
        parts.append(text[q + 1 : e])
        i = e + 1
    return "/".join(parts) if parts else sym_name(variant) or text
