"""What the assembly view shows (core/npu/report/assembly_model.py), without Qt.

Truths: the listing's own tag column (`dD.tT`, docs/npu-isa.md) for each line's dispatch and task;
the program's tasks for which tasks have lines; a backend without an emitter or with one that
raises, made by hand from the generic backend.
"""

from __future__ import annotations

import copy
import dataclasses
import re

import pytest

from npu_studio.core.npu.backend import registry
from npu_studio.core.npu.backend.api import BackendError
from npu_studio.core.npu.plan.passes import run_npu_pipeline
from npu_studio.core.npu.report.assembly_model import AssemblyCache, assembly_model

TAG = re.compile(r"^d(\d+)(?:\.t(\d+))?\s")


@pytest.fixture(scope="module")
def program(example_workspace):
    return run_npu_pipeline(example_workspace.snapshot_path("flow"), registry.load_target(registry.load()))


def test_each_line_s_tag_is_the_listing_s_own(program):
    model = assembly_model(program)
    lines = model.text.splitlines()
    tagged = {n: TAG.match(text) for n, text in enumerate(lines, 1) if TAG.match(text)}
    assert set(model.by_line) == set(tagged)  # every tagged line, and only those
    for n, m in tagged.items():
        tag = model.tag_at(n)
        assert (tag.dispatch, tag.task) == (int(m.group(1)), int(m.group(2)) if m.group(2) else None)
    assert model.tag_at(1) is None  # the header comment
    for t in program.tasks:
        assert [n for n, m in tagged.items() if m.group(2) == str(t.id)] == list(model.lines_of_task(t.id))
    d0 = model.lines_of_dispatch(0)
    assert d0 == tuple(n for n, m in tagged.items() if m.group(1) == "0") and lines[d0[0] - 1].split()[1] == ".dispatch"
    ends = [model.tag_at(n).offset + model.tag_at(n).size for n in model.by_line]
    assert all(0 < e <= model.binary_size for e in ends)
    assert model.summary().startswith(f"generic: {len(tagged):,} tagged instructions, {model.binary_size:,} bytes")


def test_a_backend_without_an_emitter_says_so(program, monkeypatch):
    monkeypatch.setitem(registry._loaded, "generic", dataclasses.replace(registry.load("generic"), emit=None))
    model = assembly_model(program)
    assert model.emitted is None and model.text == "" and model.tag_at(2) is None
    assert model.summary() == "The NPU backend 'generic' has no emitter: it shows no assembly."


def test_a_backend_whose_emitter_raises_is_one_line_naming_it(program, monkeypatch):
    def boom(_program):
        raise RuntimeError("the vendor's assembler crashed")

    monkeypatch.setitem(registry._loaded, "generic",
                        registry.guarded(dataclasses.replace(registry.load("generic"), emit=boom)))
    with pytest.raises(BackendError) as e:
        assembly_model(program)
    assert str(e.value) == "NPU backend 'generic': emit raised RuntimeError: the vendor's assembler crashed"


def test_cache_finds_a_program_by_identity_and_keeps_the_last_few(program):
    cache = AssemblyCache(size=2)
    model = assembly_model(program)
    cache.put(program, model)
    assert cache.get(program) is model
    assert cache.get(copy.copy(program)) is None  # an equal program is another program
    others = [copy.copy(program) for _ in range(2)]
    for p in others:
        cache.put(p, model)
    assert cache.get(program) is None and all(cache.get(p) is model for p in others)
