"""A flow-phase edit that perturbs one dispatch's float results, for the fault-injection check.

Every float `dispatch.tensor.store` of the dispatch's function stores y + 0.5 + 0.25 y^2 instead
of y: at least 0.5 away from the true value at every element (visible at any tolerance the
tools use) and not affine, so a LayerNorm or Softmax downstream cannot undo it. When the
executable is shared by several dispatch sites, the perturbed one gets its own copy, so the
fault sits in exactly one dispatch.
"""

from __future__ import annotations

import re

SITE = re.compile(r"flow\.dispatch @([\w$.-]+)::@([\w$.-]+)\(")
STORE = re.compile(r"^(\s*)((?:iree_tensor_ext|flow)\.dispatch\.tensor\.store) (%[\w#.$-]+), (.*?) : "
                   r"tensor<([0-9x]*?)x?(f16|f32|bf16)> -> ", re.M)
FLOAT_STORE = re.compile(r"\.dispatch\.tensor\.store .* : tensor<[0-9x]*?x?(?:f16|f32|bf16)> -> ")


def sites(flow: str) -> list[tuple[str, str]]:
    """(executable, export) of every dispatch site, in execution order (the trace's numbering)."""
    return SITE.findall(flow)


def _executable_span(flow: str, name: str) -> tuple[int, int] | None:
    m = re.search(r"^  flow\.executable private @" + re.escape(name) + r" \{", flow, re.M)
    if m is None:
        return None
    end = re.compile(r"^  \}.*$", re.M).search(flow, m.end())
    return (m.start(), end.end()) if end else None


def float_result_sites(flow: str) -> list[int]:
    """Sites whose executable stores at least one float tensor."""
    out = []
    for i, (exe, _) in enumerate(sites(flow)):
        span = _executable_span(flow, exe)
        if span and FLOAT_STORE.search(flow, span[0], span[1]):
            out.append(i)
    return out


def _perturbed(m: re.Match, k: int) -> str:
    indent, op, value, rest, dims, et = m.groups()
    rank = len(dims.split("x")) if dims else 0
    ds = ", ".join(f"d{i}" for i in range(rank))
    ident = f"affine_map<({ds}) -> ({ds})>"
    iterators = ", ".join(['"parallel"'] * rank)
    t = f"tensor<{dims + 'x' if dims else ''}{et}>"
    p = f"%fault{k}"
    body = (f"{indent}{p}_init = tensor.empty() : {t}\n"
            f"{indent}{p} = linalg.generic {{indexing_maps = [{ident}, {ident}], "
            f"iterator_types = [{iterators}]}} "
            f"ins({value} : {t}) outs({p}_init : {t}) {{\n"
            f"{indent}^bb0({p}_in: {et}, {p}_out: {et}):\n"
            f"{indent}  {p}_half = arith.constant 5.000000e-01 : {et}\n"
            f"{indent}  {p}_quarter = arith.constant 2.500000e-01 : {et}\n"
            f"{indent}  {p}_sq = arith.mulf {p}_in, {p}_in : {et}\n"
            f"{indent}  {p}_q = arith.mulf {p}_sq, {p}_quarter : {et}\n"
            f"{indent}  {p}_a = arith.addf {p}_in, {p}_half : {et}\n"
            f"{indent}  {p}_r = arith.addf {p}_a, {p}_q : {et}\n"
            f"{indent}  linalg.yield {p}_r : {et}\n"
            f"{indent}}} -> {t}\n")
    return body + f"{indent}{op} {p}, {rest} : {t} -> "


def perturb(flow: str, site: int) -> str:
    """The flow text with dispatch site `site`'s float results perturbed (ValueError: no float result)."""
    all_sites = sites(flow)
    exe, export = all_sites[site]
    span = _executable_span(flow, exe)
    if span is None:
        raise ValueError(f"no flow.executable @{exe}")
    block = flow[span[0]:span[1]]
    counter = iter(range(1_000_000))
    edited = STORE.sub(lambda m: _perturbed(m, next(counter)), block)
    if edited == block:
        raise ValueError(f"@{exe} stores no float tensor")
    if sum(1 for e, _ in all_sites if e == exe) == 1:
        return flow[:span[0]] + edited + flow[span[1]:]
    # Shared: a private copy for this site only, the others keep the original. Its export and
    # function get new names too: IREE names the HAL executable's symbols after the export.
    clone = exe + "_fault"
    edited = edited.replace(f"@{exe} {{", f"@{clone} {{", 1)
    edited = re.sub(r"@" + re.escape(export) + r"(?![\w$.-])", f"@{export}_fault", edited)
    calls = list(SITE.finditer(flow))
    call = calls[site]
    ref = f"@{exe}::@{export}("
    at = flow.index(ref, call.start())
    flow = flow[:at] + f"@{clone}::@{export}_fault(" + flow[at + len(ref):]
    return flow[:span[1]] + "\n" + edited + flow[span[1]:]
