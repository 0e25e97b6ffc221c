"""The generic NPU's instruction set: encodings checked by hand against docs/npu-isa.md, round trips
on real programs, the emitter's engines and waits against the timing simulator, bad binaries."""

from __future__ import annotations

import heapq
import random
import struct
import zlib

import pytest

from npu_studio.cli import main
from npu_studio.core.npu.isa import from_binary, from_text, program_assembly
from npu_studio.core.npu.isa.encoding import BinaryError, assemble, disassemble
from npu_studio.core.npu.isa.listing import Instruction
from npu_studio.core.npu.sim import simulate
from npu_studio.core.npu.store.workspace_io import run_for_workspace

# -- encodings written out by hand from the tables in docs/npu-isa.md ---------------------------


def _file(n_strings: int, n_records: int, body: bytes, n_sections: int = 0) -> bytes:
    return b"NPUA" + bytes([2, 0, 28, 0]) + n_strings.to_bytes(4, "little") + n_records.to_bytes(4, "little") \
        + n_sections.to_bytes(4, "little") + len(body).to_bytes(4, "little") + zlib.crc32(body).to_bytes(4, "little") \
        + body


def _u64(*xs: int) -> bytes:
    return b"".join(x.to_bytes(8, "little") for x in xs)


def test_sem_wait_encoding_is_the_documented_example():
    body = bytes.fromhex("50 40 02 00 00 00 00 00 00 00 00 00") + _u64(2, 3)
    assert assemble([Instruction("sem.wait", "mac", 0, 0, ("dma2", 3))]) == _file(0, 1, body)


def test_dma_load_and_mac_tile_encodings():
    load = Instruction("dma.load", "dma1", 3, 12, (0x2A800, 0x791880, 1, 36936, 36936, 0, 0, 0, 0, 4, 0))
    # opcode 0x10, engine 1, 11 operands, dispatch 3, task 12
    load_bytes = bytes([0x10, 1, 11, 0]) + (3).to_bytes(4, "little") + (12).to_bytes(4, "little") \
        + _u64(0x2A800, 0x791880, 1, 36936, 36936, 0, 0, 0, 0, 4, 0)
    mac = Instruction("mac.tile", "mac", 3, 12, ("ws", "i8", "i32", 4, 1, 2720, 8, 27, 1, 1, "per-channel",
                                                  "half-even", 1, 1, 0, "i8", ("add", "max"), (0x0,),
                                                  (0x2A800, 0x3C900)))
    # flow ws=1, in i8=2, acc i32=5, out i8=2; scale per-channel=2, round half-even=1; post add|max = bits 0, 4
    fields = _u64(1, 2, 5, 4, 1, 2720, 8, 27, 1, 1, 2, 1, 1, 1, 0, 2, 0b10001, 1, 0x0, 2, 0x2A800, 0x3C900)
    mac_bytes = bytes([0x20, 64]) + (22).to_bytes(2, "little") + (3).to_bytes(4, "little") \
        + (12).to_bytes(4, "little") + fields
    body = load_bytes + mac_bytes
    assert assemble([load, mac]) == _file(0, 2, body)


def test_strings_and_directives_encoding():
    ins = [Instruction(".buffer", "-", None, None, ("d1", "dram", "input", "f32", 0x100, 64)),
           Instruction(".task", "-", 0, 5, ((0, 16), (16, 8), (3,))),
           Instruction("barrier", "-", None, None, ())]
    strings = (2).to_bytes(4, "little") + b"d1" + (3).to_bytes(4, "little") + b"f32"
    none = 0xFFFFFFFF.to_bytes(4, "little")
    buffer = bytes([0x02, 255, 6, 0]) + none + none + _u64(0, 0, 0, 1, 0x100, 64)
    task = bytes([0x03, 255, 8, 0]) + (0).to_bytes(4, "little") + (5).to_bytes(4, "little") \
        + _u64(2, 0, 16, 2, 16, 8, 1, 3)
    barrier = bytes([0x51, 255, 0, 0]) + none + none
    body = strings + buffer + task + barrier
    data = assemble(ins)
    assert data == _file(2, 3, body)
    assert disassemble(data) == ins


def test_strided_padded_dma_and_sections_encoding():
    # a 3x3 i8 window of a 5-wide image, padded by one element all round with -128 (0x80): DRAM rows 5 bytes
    # apart, SRAM rows of 1 + 3 + 1 bytes; the store writes 2 rows of 4 bytes, 6 apart in SRAM, 16 in DRAM
    load = Instruction("dma.load", "dma0", 0, 1, (0x40, 0x1000, 3, 3, 5, 1, 1, 1, 1, 1, 0x80))
    store = Instruction("dma.store", "dma1", 0, 1, (0x2000, 0x40, 2, 4, 16, 6))
    text = from_binary(assemble([load, store])).text()
    assert "rows=3 row=3 stride=5 top=1 bottom=1 left=1 right=1 esize=1 pad=128" in text
    assert "rows=2 row=4 stride=16 pitch=6" in text
    # a section: kind 1, dispatch 7, 8 payload bytes, after the instructions and inside the CRC
    from npu_studio.core.npu.isa.encoding import Section, sections

    barrier = bytes([0x51, 255, 0, 0]) + 0xFFFFFFFF.to_bytes(4, "little") * 2
    section = (1).to_bytes(4, "little") + (7).to_bytes(4, "little") + (8).to_bytes(4, "little") + _u64(42)
    data = assemble([Instruction("barrier", "-", None, None, ())], [Section(1, 7, _u64(42))])
    assert data == _file(0, 1, barrier + section, n_sections=1)
    assert sections(data) == [(Section(1, 7, _u64(42)), 28 + len(barrier) + 12)]
    with pytest.raises(BinaryError, match="offset 48: section 0: 4096 bytes run past the end"):
        bad = bytearray(data)
        bad[48:52] = (4096).to_bytes(4, "little")
        body = bytes(bad[28:])
        bad[24:28] = zlib.crc32(body).to_bytes(4, "little")
        disassemble(bytes(bad))


def test_text_errors_name_line_and_column(tmp_path):
    pads = " top=0 bottom=0 left=0 right=0 esize=1 pad=0"
    good = "d0.t1 dma.load dma0 dst=0x10 src=0x20 rows=1 row=4 stride=4" + pads + "\n"
    assert from_text(good).instructions[0].args == (0x10, 0x20, 1, 4, 4, 0, 0, 0, 0, 1, 0)
    with pytest.raises(Exception, match=r"x\.npus:2:\d+: .*rows"):
        from_text(good + "d0.t1 dma.load dma0 dst=0x10 src=0x20 rows=one row=4 stride=4" + pads + "\n", "x.npus")
    with pytest.raises(Exception, match=r"x\.npus:1:\d+: .*cannot run on engine 'mac'"):
        from_text("d0.t1 dma.load mac dst=0x10 src=0x20 rows=1 row=4 stride=4" + pads + "\n", "x.npus")
    with pytest.raises(Exception, match=r"x\.npus:1:\d+: .*missing field 'stride'"):
        from_text("d0.t1 dma.load dma0 dst=0x10 src=0x20 rows=1 row=4" + pads + "\n", "x.npus")


# -- real programs --------------------------------------------------------------------------------


def _check_program(program):
    listing = program_assembly(program)
    text, data = listing.text(), listing.binary()
    assert from_binary(data).text() == text  # binary -> text
    assert from_text(text).binary() == data  # text -> binary
    _check_against_simulator(program, listing)
    one = program.tasks[-1].dispatch
    part = program_assembly(program, one)
    assert from_binary(part.binary()).text() == part.text()
    assert {i.dispatch for i in part.instructions} <= {one, None}


def _check_against_simulator(program, listing):
    """Every step is one work instruction on the engine the simulator ran it on, tagged with its task; the
    waits alone keep each task's dependencies and step groups in order under random instruction times."""
    result = simulate(program)
    work = [i for i in listing.instructions if i.op not in (".buffer", ".dispatch", ".task", "sem.wait", "barrier")]
    assert len(work) == len(result.steps)
    sim_engines = [result.engines[e].replace("vector", "vec") for e in result.steps.engine]
    assert [i.engine for i in work] == sim_engines
    assert [i.task for i in work] == list(result.steps.task)
    assert [i.dispatch for i in work] == [result.tasks.dispatch[t] for t in result.steps.task]
    start, end = _replay(listing.instructions, random.Random(0))
    steps_of: dict[int, list[int]] = {}
    for n, t in enumerate(result.steps.task):
        steps_of.setdefault(t, []).append(n)
    kinds = result.steps.kind
    for task in program.tasks:
        mine = steps_of.get(task.id, [])
        groups = [[mine[0]]] if mine else []
        for a, b in zip(mine, mine[1:]):
            (groups[-1].append(b) if kinds[b] == kinds[a] else groups.append([b]))
        for prev, nxt in zip(groups, groups[1:]):
            assert min(start[s] for s in nxt) >= max(end[s] for s in prev), f"task {task.id}: groups overlap"
        for dep in task.deps:
            if groups and steps_of.get(dep):
                assert min(start[s] for s in groups[0]) >= max(end[s] for s in steps_of[dep]), \
                    f"task {task.id} started before task {dep} ended"


def _replay(instructions, rng):
    """Run the listing: each engine in order, sem.wait blocking, work taking 1..9 time units."""
    queues: dict[str, list] = {}
    n = 0
    for ins in instructions:
        if ins.op == "sem.wait":
            queues.setdefault(ins.engine, []).append(("wait", ins.args))
        elif ins.engine != "-":
            queues.setdefault(ins.engine, []).append(("work", n))
            n += 1
    done = {e: 0 for e in queues}
    pos = {e: 0 for e in queues}
    free = {e: 0 for e in queues}  # time the engine is free
    start, end = [0] * n, [0] * n
    events: list = []  # (time, engine) completions
    now = 0
    while True:
        progressed = True
        while progressed:
            progressed = False
            for e, q in queues.items():
                if pos[e] >= len(q) or free[e] > now:
                    continue
                kind, x = q[pos[e]]
                if kind == "wait":
                    if done.get(x[0], 0) >= x[1]:
                        pos[e] += 1
                        progressed = True
                else:
                    start[x], end[x] = now, now + rng.randint(1, 9)
                    free[e] = end[x]
                    heapq.heappush(events, (end[x], e))
                    pos[e] += 1
                    progressed = True
        if not events:
            break
        now, e = heapq.heappop(events)
        done[e] += 1
    assert all(pos[e] == len(q) for e, q in queues.items()), "the listing deadlocks"
    return start, end


def test_round_trip_example(example_workspace, tmp_path):
    import shutil

    from npu_studio.core.workspace.workspace import Workspace

    shutil.copytree(example_workspace.root, tmp_path / "ws")
    _check_program(run_for_workspace(Workspace.open(tmp_path / "ws")))


@pytest.mark.slow
def test_round_trip_resnet50_and_qdq(tmp_path):
    import shutil

    from npu_studio.core.workspace.workspace import Workspace
    from tests.zoo_cache import quant_zoo_workspace, zoo_workspace

    for label, ws in (("f32", zoo_workspace("resnet50")), ("i8", quant_zoo_workspace("resnet50", "i8"))):
        shutil.copytree(ws.root, tmp_path / label)
        program = run_for_workspace(Workspace.open(tmp_path / label))
        if label == "i8":  # the QDQ model's MAC tiles read i8 and drain through the output stage
            tiles = [i for i in program_assembly(program).instructions if i.op == "mac.tile"]
            assert any(t.args[1] == "i8" and t.args[10] != "none" for t in tiles)
        _check_program(program)


# -- bad binaries through the CLI -----------------------------------------------------------------


def test_truncated_or_corrupted_binary_is_one_line(fresh_example, tmp_path, capsys):
    good, text = tmp_path / "p.npub", tmp_path / "p.npus"
    assert main(["asm", str(fresh_example.root), "--binary", str(good), "--out", str(text)]) == 0
    data = good.read_bytes()
    capsys.readouterr()
    assert main(["asm", str(good)]) == 0
    assert capsys.readouterr().out == text.read_text()
    cases = {"trunc.npub": (data[:1000], "offset 1000: truncated"),
             "short.npub": (data[:10], "offset 10: truncated"),
             "opcode.npub": (None, "unknown opcode"),
             "flip.npub": (None, "offset 24: corrupted")}
    first_record = 28 + _string_table_size(data)
    bad_opcode = bytearray(data)
    bad_opcode[first_record] = 0xEE
    flipped = bytearray(data)
    flipped[28 + 4] ^= 0x01  # a letter of the first string, still a letter: only the CRC can tell
    cases["opcode.npub"] = (bytes(bad_opcode), f"offset {first_record}: unknown opcode 0xee")
    cases["flip.npub"] = (bytes(flipped), "offset 24: corrupted")
    for name, (content, message) in cases.items():
        path, out = tmp_path / name, tmp_path / (name + ".npus")
        path.write_bytes(content)
        assert main(["asm", str(path), "--out", str(out)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and str(path) in err[0] and message in err[0], err
        assert not out.exists()
        with pytest.raises(BinaryError):
            disassemble(content, path)


def _string_table_size(data: bytes) -> int:
    (count,) = struct.unpack_from("<I", data, 8)
    pos = 28
    for _ in range(count):
        (n,) = struct.unpack_from("<I", data, pos)
        pos += 4 + n
    return pos - 28


def test_the_generic_backend_emits_through_the_backend_api(example_workspace, tmp_path):
    # The registry's generic backend gives the ISA's text and binary; each emitted line names the dispatch and
    # task its text line starts with (d<dispatch>.t<task>), and its bytes are one record of the binary.
    import shutil

    from npu_studio.core.npu.backend import registry
    from npu_studio.core.npu.isa.encoding import disassemble
    from npu_studio.core.workspace.workspace import Workspace

    shutil.copytree(example_workspace.root, tmp_path / "ws")
    program = run_for_workspace(Workspace.open(tmp_path / "ws"))
    emitted = registry.load("generic").emit(program)
    text_lines = emitted.assembly.splitlines()
    assert emitted.lines and len(disassemble(emitted.binary)) >= len(emitted.lines)
    previous_end = 0
    for line in emitted.lines:
        prefix = f"d{line.dispatch}.t{line.task}" if line.task is not None else f"d{line.dispatch}"
        assert text_lines[line.line - 1].split()[0].startswith(prefix), text_lines[line.line - 1]
        assert line.offset >= previous_end and line.size >= 12 and (line.size - 12) % 8 == 0
        previous_end = line.offset + line.size
    assert previous_end <= len(emitted.binary)


def test_asm_counts_the_same_instructions_when_emitting_and_disassembling(example_workspace, tmp_path, capsys):
    """Emitting a program and disassembling its binary report the same count, that of the text's
    tagged lines (a tag other than `-`, docs/npu-isa.md) (issue 38, eyes38: 119 against 177)."""
    import re
    import shutil

    ws = tmp_path / "ws"
    shutil.copytree(example_workspace.root, ws)
    text, binary = tmp_path / "p.npus", tmp_path / "p.npub"
    assert main(["asm", str(ws), "--out", str(text), "--binary", str(binary)]) == 0
    emitted = capsys.readouterr().out
    assert main(["asm", str(binary), "--out", str(tmp_path / "again.npus")]) == 0
    disassembled = capsys.readouterr().out
    tagged = sum(1 for ln in text.read_text().splitlines() if ln and not ln.startswith(";") and ln.split()[0] != "-")
    counts = [re.match(r"([\d,]+) tagged instructions, ", s).group(1).replace(",", "") for s in (emitted, disassembled)]
    assert counts == [str(tagged), str(tagged)], (emitted, disassembled)
