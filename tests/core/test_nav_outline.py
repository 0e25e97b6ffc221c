"""`NavIndex.outline_at` (a bisect and a parent chain) against the linear scan it replaced, line by line,
on real snapshots of every phase and on random nestings of regions, whole and cut short (broken text).

Truth: `linear_outline_at`, the former implementation, kept here: the innermost item (greatest depth,
the later on a tie) whose lines hold the line.
"""

from __future__ import annotations

import random

import pytest

from npu_studio.core.compile.phases import SNAPSHOT_PHASES
from npu_studio.core.ir import nav_index
from tests.conftest import EXAMPLE
from tests.zoo_cache import cached_workspace


def linear_outline_at(index: nav_index.NavIndex, line: int):
    best = None
    for item in index.outline:
        if item.start_line > line:
            break
        if item.end_line >= line and (best is None or item.depth >= best.depth):
            best = item
    return best


def check_every_line(index: nav_index.NavIndex) -> None:
    for line in range(0, len(index.lines) + 2):
        assert index.outline_at(line) == linear_outline_at(index, line), f"line {line}"


@pytest.mark.parametrize("phase", [p for p in SNAPSHOT_PHASES if p != "start"])
def test_outline_at_is_the_linear_scan_s_on_real_snapshots(phase):
    ws = cached_workspace("single_conv", lambda folder: EXAMPLE, group="zoo")
    index = nav_index.build(ws.snapshot_path(phase).read_text(encoding="utf-8"))
    assert index.outline
    check_every_line(index)


OPENERS = ["flow.executable private @e{n}", "hal.executable private @h{n}", "builtin.module @m{n}", "module",
           "func.func @f{n}(%a: f32) -> f32", "hal.executable.variant public @v{n} target(#t)",
           "%r{n} = flow.dispatch.region -> (tensor<4xf32>)", "scf.for %i{n} = %c0 to %c4 step %c1",
           "util.initializer"]
LEAVES = ["flow.dispatch @e{n}::@x{n}(%a) : (f32) -> f32", "%s{n} = stream.async.dispatch @e{n}::@x(%a) : (f32) -> f32",
          "%v{n} = arith.addf %a, %a : f32", "", "func.func private @d{n}(f32) -> f32",
          "func.func @one{n}(%a: f32) -> f32 {{ return %a : f32 }}",
          "hal.executable.export public @x{n} ordinal(0) layout(#l)"]


def random_nesting(rng: random.Random) -> str:
    lines: list[str] = []
    counter = iter(range(1_000_000))

    def block(depth: int) -> None:
        for _ in range(rng.randint(0, 5)):
            pad = "  " * depth
            if depth < 6 and rng.random() < 0.35:
                lines.append(pad + rng.choice(OPENERS).format(n=next(counter)) + " {")
                block(depth + 1)
                if rng.random() < 0.2 and lines and lines[-1].strip() == "}":  # `} }`: two regions end on a line
                    lines[-1] += " }"
                else:
                    lines.append(pad + "}")
            else:
                lines.append(pad + rng.choice(LEAVES).format(n=next(counter)))

    block(0)
    return "\n".join(lines)


@pytest.mark.parametrize("seed", range(40))
def test_outline_at_is_the_linear_scan_s_on_random_nestings(seed):
    rng = random.Random(seed)
    text = random_nesting(rng)
    check_every_line(nav_index.build(text))
    cut = text.split("\n")[: rng.randint(1, text.count("\n") + 1)]  # cut short: regions left open
    check_every_line(nav_index.build("\n".join(cut)))


def test_random_nestings_nest_deep_enough_to_mean_something():
    """The generator is worth its salt: outlines with depth and single-line items among them."""
    indexes = [nav_index.build(random_nesting(random.Random(seed))) for seed in range(40)]
    assert max(max((o.depth for o in ix.outline), default=0) for ix in indexes) >= 3
    assert sum(1 for ix in indexes for o in ix.outline if o.start_line == o.end_line) > 20
    assert sum(len(ix.outline) for ix in indexes) > 300
