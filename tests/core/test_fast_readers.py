"""The NPU program reader's fast paths check exactly what the slow ones do.

`typed()` builds each record through a generated function (textio._fast_checker) and falls back to
the field-by-field check for anything it does not accept; `parse_json` skips its per-integer hook
when one scan finds no 16-digit run. The references here are the slow forms: the field-by-field
checker and `json.loads` with the bounded-integer hook on every integer.
"""

from __future__ import annotations

import copy
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from npu_studio.core import textio
from npu_studio.core.errors import BadFile
from npu_studio.core.npu.program.npu_ir import Buffer, DispatchInfo, NpuProgram, Step, Task
from npu_studio.core.npu.plan.passes import run_npu_pipeline
from npu_studio.core.textio import JSON_INT_LIMIT, parse_json, typed

from .test_reader_properties import HOSTILE_VALUES, _leaves

LIMIT = JSON_INT_LIMIT
RECORDS = {"tasks": Task, "buffers": Buffer, "dispatches": DispatchInfo}
BOUNDARY_INTS = [LIMIT, -LIMIT, LIMIT + 1, -LIMIT - 1, 10 ** 15 - 1, 10 ** 15, 10 ** 16, 7, -3]


@pytest.fixture(scope="module")
def program_dict(example_workspace) -> dict:
    program = run_npu_pipeline(example_workspace.snapshot_path("flow"), "tiny")
    return json.loads(program.to_json())


def _outcome(check, value):
    """('ok', result) or ('mismatch', reason, path) of a checker; any other exception escapes."""
    try:
        return ("ok", check(value))
    except textio._Mismatch as exc:
        return ("mismatch", exc.reason, exc.path)


def _slow(cls):
    return textio._slow_dataclass_checker(cls, LIMIT)


def test_fast_path_takes_every_record_of_a_real_program(program_dict):
    """Without this the speed-up would silently vanish: each well-formed record goes the fast way,
    and builds what the field-by-field check builds."""
    assert program_dict["tasks"] and program_dict["buffers"] and program_dict["dispatches"]
    for key, cls in RECORDS.items():
        fast = textio._fast_checker(cls, LIMIT)
        for record in program_dict[key]:
            assert fast(record) == _slow(cls)(record)
    steps = [s for t in program_dict["tasks"] for s in t["steps"]]
    assert steps and all(textio._fast_checker(Step, LIMIT)(s) == _slow(Step)(s) for s in steps)


@st.composite
def mutated_record(draw, program_dict: dict):
    key = draw(st.sampled_from(sorted(RECORDS)))
    record = copy.deepcopy(draw(st.sampled_from(program_dict[key])))
    places = [p for p in _leaves(record) if p]
    for _ in range(draw(st.integers(1, 2))):
        path = draw(st.sampled_from(places))
        parent = record
        try:
            for p in path[:-1]:
                parent = parent[p]
            kind = draw(st.sampled_from(["value", "boundary", "delete", "extra", "bool-in-list"]))
            if kind == "delete" and isinstance(parent, dict):
                del parent[path[-1]]
            elif kind == "extra" and isinstance(parent, dict):
                parent["unexpected"] = 1
            elif kind == "bool-in-list" and isinstance(parent, list):
                parent.append(True)
            elif kind == "boundary":
                parent[path[-1]] = draw(st.sampled_from(BOUNDARY_INTS))
            else:
                parent[path[-1]] = draw(st.sampled_from(HOSTILE_VALUES))
        except (KeyError, IndexError, TypeError):
            continue
    return RECORDS[key], record


@settings(max_examples=300, derandomize=True, deadline=None)
@given(data=st.data())
def test_fast_path_accepts_only_what_the_slow_check_accepts(program_dict, data):
    cls, record = data.draw(mutated_record(program_dict))
    slow = _outcome(_slow(cls), record)
    try:
        fast = ("ok", textio._fast_checker(cls, LIMIT)(record))
    except Exception:  # noqa: BLE001 - the fast path may refuse anything; the slow one then decides
        fast = None
    if fast is not None:
        assert fast == slow
    # typed() as the reader calls it: the same result, or the slow check's message and place.
    assert _outcome(textio._checker(tuple[cls, ...], LIMIT), [record]) == (
        ("ok", (slow[1],)) if slow[0] == "ok" else ("mismatch", slow[1], [*slow[2], "[0]"]))


def test_typed_names_the_place_of_a_bad_step(program_dict):
    """A hand-placed error deep in one task of many: the message names that task and field."""
    tasks = copy.deepcopy(program_dict["tasks"]) * 3
    bad = len(tasks) - 2
    tasks[bad] = copy.deepcopy(tasks[bad])
    tasks[bad]["steps"][0]["bytes"] = "12"
    with pytest.raises(ValueError, match=rf"^tasks\[{bad}\]\.steps\[0\]\.bytes: expected an integer, got str$"):
        typed(tuple[Task, ...], tasks, "tasks")
    tasks[bad]["steps"][0]["bytes"] = LIMIT + 1
    with pytest.raises(ValueError, match=r"\.steps\[0\]\.bytes: 9,007,199,254,740,993 is out of range"):
        typed(tuple[Task, ...], tasks, "tasks")


def _reference_json(text: str):
    """What parse_json did before its bulk check: the bounded-integer hook on every integer."""
    try:
        return ("ok", json.loads(text, parse_int=textio._bounded_int, parse_float=textio._finite_float,
                                 parse_constant=textio._no_constant))
    except textio._Refused as exc:
        return ("refused", str(exc))


@settings(max_examples=300, derandomize=True, deadline=None)
@given(numbers=st.lists(st.one_of(st.sampled_from(BOUNDARY_INTS), st.integers(-(1 << 60), 1 << 60)), max_size=6),
       names=st.lists(st.text("0123456789ab", max_size=20), max_size=3))
def test_parse_json_bulk_integer_check_matches_the_hook(tmp_path_factory, numbers, names):
    text = json.dumps({"n": numbers, "names": names, "x": [1.5, -2]})
    expected = _reference_json(text)
    try:
        got = ("ok", parse_json(text, "f.json"))
    except BadFile as exc:
        got = ("refused", exc.reason.removeprefix("not JSON: "))
    assert got == expected


def test_a_large_program_loads_with_the_collector_back_on(program_dict, tmp_path):
    import gc

    path = tmp_path / "p.npu.json"
    path.write_text(json.dumps(program_dict))
    assert gc.isenabled()
    assert NpuProgram.load(path).to_dict() == program_dict
    assert gc.isenabled()
    path.write_text(json.dumps({**program_dict, "tasks": [{"id": "x"}]}))
    with pytest.raises(BadFile):
        NpuProgram.load(path)
    assert gc.isenabled()
