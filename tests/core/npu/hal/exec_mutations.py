"""Mutated program binaries (npu_program.npub) for the C interpreter's memory-safety tests.

`description(binary)` opens a binary as dicts a mutation edits (its instructions, and per dispatch
its compute section as exec_desc's fields plus its `.task` tiles as tile_offsets/tile_sizes);
`rebuild` writes the edited dicts back as a binary with a valid CRC, so the mutation reaches the
decoder's and the verifier's checks. `random_mutation` edits the bytes themselves.

`CLASSES` holds one or more hand-made mutations per kind of bad description
found by attacking the interpreter (issue 36), each applied to the
description of the attention block (tests/core/npu/npu_models.attention):
dispatch 0 a batch matmul (consts, loads, a fill, the MAC root, a fused
scale, a store), dispatch 1 a softmax, dispatch 2 another batch matmul.
`OUTSIDE` names those whose description reaches outside IREE's buffers
(never "OK"). `random_mutation` makes any number more, seeded.
"""

from __future__ import annotations

import base64
import copy
import json
import random
import struct
import zlib
from dataclasses import asdict

from npu_studio.core.npu.hal.exec_binary import encode_section, load_program
from npu_studio.core.npu.isa.encoding import Section, assemble, disassemble, sections
from npu_studio.core.npu.isa.listing import Instruction
from npu_studio.core.npu.isa.spec import HEADER_SIZE, SECTION_COMPUTE

BIG = (2 ** 32, 2 ** 32 + 1, 2 ** 40, 2 ** 53, 2 ** 53 + 1, 2 ** 63 - 1, -(2 ** 63), -1, 0, 1, 3, 1000)


def _op(**kw) -> dict:
    base = {"op": "empty", "args": [], "results": [], "binding": -1, "offsets": [], "sizes": [], "strides": [],
            "data": "", "splat": False, "n_in": 0, "maps": [], "reduction": [], "ranges": [], "body": [],
            "yields": [], "dim": 0}
    base.update(kw)
    return base


def _body(op: str, args, type_: str, **kw) -> dict:
    return {"op": op, "args": list(args), "type": type_, "attr": 0, "f": "", "i": 0, "round": "", "saturate": False,
            **kw}


def _index(d: dict, kind: str, nth: int = 0) -> int:
    return [k for k, op in enumerate(d["ops"]) if op["op"] == kind][nth]


def _new_value(d: dict, element: str, shape) -> int:
    d["values"].append({"element": element, "shape": list(shape)})
    return len(d["values"]) - 1


def _mac(d: dict) -> dict:
    return d["ops"][d["root"]]


def _four_bindings(d: dict) -> None:
    """A fourth binding (value 3) the dispatch's executable does not pass: every later id moves up."""
    at = d["bindings"]
    for op in d["ops"]:
        op["args"] = [a + (a >= at) for a in op["args"]]
        op["results"] = [r + (r >= at) for r in op["results"]]
        for b in op["body"]:
            if b["op"] in ("outer", "extract") and b["attr"] >= at:
                b["attr"] += 1
    d["values"].insert(at, {"element": "f32", "shape": [4]})
    d["bindings"] += 1


def _int64_min_by_minus_one(d: dict) -> None:
    """The fill's body computes INT64_MIN / -1 (-2^53 * 1024 wraps to INT64_MIN; JSON cannot hold it)."""
    fill = d["ops"][d["root"] - 1]
    fill["body"] = [_body("const", (), "i64", i=-(2 ** 53)), _body("const", (), "i64", i=1024),
                    _body("arith.muli", (2, 3), "i64"), _body("const", (), "i64", i=-1),
                    _body("arith.divsi", (4, 5), "i64"), _body("arith.remsi", (4, 5), "i64"),
                    _body("arith.floordivsi", (4, 5), "i64"), _body("arith.ceildivsi", (4, 5), "i64"),
                    _body("arith.addi", (6, 7), "i64"), _body("arith.addi", (10, 8), "i64"),
                    _body("arith.addi", (11, 9), "i64"), _body("math.absi", (4,), "i64"),
                    _body("arith.addi", (12, 13), "i64"), _body("arith.sitofp", (14,), "f32")]
    fill["yields"] = [15]


def _reshape_i8_as_f32(d: dict) -> None:
    """The softmax's operand becomes a reshape of an i8 constant of as many elements (1/4 of the bytes)."""
    load = _index(d, "load")
    target = d["ops"][load]["results"][0]
    shape = d["values"][target]["shape"]
    n = 1
    for s in shape:
        n *= s
    src = _new_value(d, "i8", shape)
    d["ops"][load:load + 1] = [_op(op="const", results=[src], data=base64.b64encode(bytes(n)).decode()),
                               _op(op="reshape", args=[src], results=[target])]
    d["root"] += 1


def _insert_into_i8(d: dict) -> None:
    """The softmax's init becomes an insert_slice whose destination is an i8 tensor."""
    empty = _index(d, "empty")
    target = d["ops"][empty]["results"][0]
    shape = d["values"][target]["shape"]
    n = 1
    for s in shape:
        n *= s
    dest = _new_value(d, "i8", shape)
    one = _new_value(d, "f32", [1] * len(shape))
    d["ops"][empty:empty + 1] = [
        _op(op="const", results=[dest], data=base64.b64encode(bytes(n)).decode()),
        _op(op="const", results=[one], data=base64.b64encode(bytes(4)).decode()),
        _op(op="insert_slice", args=[one, dest], results=[target], offsets=[0] * len(shape), sizes=[1] * len(shape),
            strides=[1] * len(shape))]
    d["root"] += 2


def _index_in_scalar(d: dict) -> None:
    out = _new_value(d, "i64", [])
    d["ops"].insert(0, _op(op="scalar", results=[out], ranges=[4], reduction=[False],
                           body=[_body("index", (), "index")]))
    d["root"] += 1
    d["epilogue"] = [e + 1 for e in d["epilogue"]]


def _const_with_argument(d: dict) -> None:
    mac = _mac(d)
    mac["body"] = [_body("const", (0,), "f32", f=(1.0).hex()), _body("arith.mulf", (0, 3), "f32"),
                   _body("arith.addf", (2, 4), "f32")]
    mac["yields"] = [5]


def _coefficient_wraps(d: dict) -> None:
    """A coefficient of 2^32 on a loop of 2^32 + 1 iterations: the bound's product wraps without checks."""
    mac = _mac(d)
    mac["ranges"][1] = 2 ** 32 + 1
    mac["maps"][0][1][1] = 2 ** 32
    for t in d["tile_sizes"]:
        t[1] = 2 ** 32 + 1
    for t in d["tile_offsets"]:
        t[1] = 0


def _unused_reduction(d: dict) -> None:
    """A reduction loop no operand indexes, with a tile of 2^40: hangs without a bound."""
    mac = _mac(d)
    mac["ranges"].append(2 ** 40)
    mac["reduction"].append(True)
    for m in mac["maps"]:
        for row in m:
            row.insert(len(row) - 1, 0)
    for t in d["tile_offsets"]:
        t.append(0)
    for t in d["tile_sizes"]:
        t.append(2 ** 40)


def _input_larger(d: dict) -> None:
    """Binding 0 described with twice IREE's rows; its load still reads the first half."""
    d["values"][0]["shape"][1] *= 2


def _store_past(d: dict) -> None:
    store = d["ops"][_index(d, "store")]
    store["offsets"][-1] += 1


def _store_into_larger(d: dict) -> None:
    """The output binding described larger than IREE's buffer, the store at its far end."""
    store = d["ops"][_index(d, "store")]
    out = d["values"][store["binding"]]
    out["shape"][0] += 1
    store["offsets"][0] = 1


def _set(path, value):
    def apply(d: dict) -> None:
        node = d
        for key in path[:-1]:
            node = node[key] if not callable(key) else key(d)
        node[path[-1]] = value
    return apply


def _root(d):
    return d["ops"][d["root"]]


# (name, dispatch, mutation, reaches outside IREE's buffers)
CLASSES = [
    ("four bindings where the dispatch has three", 0, _four_bindings, True),
    ("softmax into a 1-element value", 1, lambda d: d["values"].__setitem__(_root(d)["results"][0],
                                                                              {"element": "f32", "shape": []}), True),
    ("softmax into a 1-element value (rank 1)", 1, lambda d: d["values"].__setitem__(
        _root(d)["results"][0], {"element": "f32", "shape": [1]}), True),
    ("two yields for one output", 0, lambda d: _root(d).update(yields=[4, 4]), True),
    ("index in a scalar op", 0, _index_in_scalar, True),
    ("const with an argument in a MAC body", 0, _const_with_argument, True),
    ("coefficient 2^32 with a tile of 2^32+1", 0, _coefficient_wraps, True),
    ("INT64_MIN / -1", 0, _int64_min_by_minus_one, False),
    ("reshape of i8 to f32", 1, _reshape_i8_as_f32, True),
    ("insert_slice with an i8 destination in an f32 result", 1, _insert_into_i8, True),
    ("input binding larger than IREE's buffer", 0, _input_larger, True),
    ("store past the output buffer", 0, _store_past, True),
    ("output binding larger than IREE's buffer", 0, _store_into_larger, True),
    ("reduction loop no operand uses, tile 2^40", 0, _unused_reduction, True),
    ("binding count of one", 0, _set(["bindings"], 1), True),
    ("offset of one on a dimension of one", 0,
     lambda d: d["ops"][_index(d, "load")]["offsets"].__setitem__(0, 1), True),
    ("integer over 2^40 in a shape", 0, lambda d: d["values"][0]["shape"].__setitem__(0, 2 ** 53 + 2), True),
    ("integer over 2^32 as a coefficient", 0, lambda d: _root(d)["maps"][0][0].__setitem__(0, 2 ** 60), True),
    ("negative stride", 0, lambda d: d["ops"][_index(d, "load")]["strides"].__setitem__(0, -1), True),
    ("stride that steps outside", 0, lambda d: d["ops"][_index(d, "load")]["strides"].__setitem__(2, 2), True),
    ("slice offset past the end", 1, lambda d: d["ops"][_index(d, "load")]["offsets"].__setitem__(2, 1), True),
    ("negative slice offset", 1, lambda d: d["ops"][_index(d, "load")]["offsets"].__setitem__(0, -1), True),
    ("tile past the loop", 0, lambda d: d["tile_offsets"][-1].__setitem__(0, 2), True),
    ("tile larger than the loop", 2, lambda d: d["tile_sizes"][0].__setitem__(1, 65), True),
    ("softmax tile with a partial row", 1, lambda d: d["tile_sizes"][0].__setitem__(_root(d)["dim"], 1), True),
    ("softmax dim past the rank", 1, lambda d: _root(d).update(dim=7), True),
    ("map constant past the operand", 2, lambda d: _root(d)["maps"][0][0].__setitem__(-1, 1), True),
    ("map coefficient that doubles a loop", 2, lambda d: _root(d)["maps"][1][1].__setitem__(2, 2), True),
    ("result that overwrites a binding", 0, lambda d: d["ops"][_index(d, "empty")].update(results=[0]), True),
    ("value computed twice", 0, lambda d: d["ops"][_index(d, "load", 1)].update(
        results=d["ops"][_index(d, "load")]["results"]), True),
    ("value read before it is computed", 0, lambda d: d["ops"].insert(0, d["ops"].pop(_index(d, "store"))), True),
    ("fused op before the root", 0, lambda d: d.update(epilogue=[d["root"] - 1]), True),
    ("fused op listed twice", 0, lambda d: d.update(epilogue=d["epilogue"] * 2), True),
    ("root is a store", 0, lambda d: d.update(root=_index(d, "store")), True),
    ("no tiles", 0, lambda d: d.update(tile_offsets=[], tile_sizes=[]), True),
    ("body arg past its values", 0, lambda d: _root(d)["body"][0].update(args=[99, 0]), True),
    ("outer value that is a tensor", 0, lambda d: _root(d)["body"].insert(0, _body("outer", (), "f32", attr=0)), True),
    ("gather with the wrong rank", 0, lambda d: _root(d)["body"].insert(
        0, _body("extract", (0,), "f32", attr=0)), True),
    ("const data shorter than its value", 0, lambda d: d["ops"][0].update(data=""), True),
    ("splat const of the wrong size", 0, lambda d: d["ops"][0].update(splat=True, data="AAAAAAAA"), True),
    ("load of another element type", 0, lambda d: d["values"][0].update(element="f64"), True),
    ("linalg result of another shape than its init", 2, lambda d: d["values"][_root(d)["results"][0]].update(
        shape=[2, 64, 64]), True),
    ("unknown body op", 0, lambda d: _root(d)["body"][0].update(op="arith.teleport"), True),
    ("a reason on an interpretable dispatch", 0, lambda d: d.update(reason="made up"), False),
    ("dispatch renumbered", 0, lambda d: d.update(dispatch=7), True),
    ("truncated binary", None, None, True),
]


def description(path) -> dict:
    """The binary at `path` as editable dicts (see the module doc)."""
    data = path.read_bytes()
    program = load_program(path)
    return {"instructions": disassemble(data), "data": data,
            "dispatches": [json.loads(json.dumps(asdict(d))) for d in program.dispatches]}  # lists, not tuples


def rebuild(desc: dict) -> bytes:
    """The binary of an edited description: each dispatch's section re-encoded, its `.task`
    directives given its (edited) tiles, in order; extra ones dropped, missing ones added."""
    tiles = {d["dispatch"]: list(zip(d["tile_offsets"], d["tile_sizes"])) for d in desc["dispatches"]
             if d["root"] >= 0 and not d["reason"]}
    out, used = [], {k: 0 for k in tiles}
    for ins in desc["instructions"]:
        if ins.op == ".task" and ins.dispatch in tiles:
            k = used[ins.dispatch]
            used[ins.dispatch] += 1
            if k >= len(tiles[ins.dispatch]):
                continue
            offs, sizes = tiles[ins.dispatch][k]
            ins = Instruction(".task", "-", ins.dispatch, ins.task, (tuple(offs), tuple(sizes), ins.args[2]))
        elif ins.op == "barrier":
            for dispatch, k in used.items():
                out += [Instruction(".task", "-", dispatch, 0, (tuple(o), tuple(z), ()))
                        for o, z in tiles[dispatch][k:]]
        out.append(ins)
    return assemble(out, [Section(SECTION_COMPUTE, d["dispatch"], encode_section(d)) for d in desc["dispatches"]])


def apply(description: dict, dispatch: int | None, mutation) -> bytes:
    """The mutated binary (a truncated one for the case with no mutation)."""
    if mutation is None:
        return description["data"][:len(description["data"]) // 2]
    m = copy.deepcopy({k: v for k, v in description.items() if k != "data"})
    mutation(m["dispatches"][dispatch])
    return rebuild(m)


def _fix_crc(data: bytearray) -> bytes:
    data[HEADER_SIZE - 4:HEADER_SIZE] = struct.pack("<I", zlib.crc32(bytes(data[HEADER_SIZE:])))
    return bytes(data)


def random_mutation(description: dict, rng: random.Random, edits: int = 1) -> bytes:
    """`edits` random edits of the binary's bytes: a word of a compute section or an instruction's operand
    swapped for a boundary value or nudged, a byte flipped anywhere, or the file cut short; most with
    the CRC made right again, so the edit reaches the checks behind it."""
    data = bytearray(description["data"])
    section_words = [(off + 8 * k) for sec, off in sections(bytes(data)) for k in range(len(sec.payload) // 8)]
    for _ in range(edits):
        roll = rng.random()
        section_words = [at for at in section_words if at + 8 <= len(data)]  # the file may have been cut
        if len(data) < HEADER_SIZE + 8:
            break
        if roll < 0.5 and section_words:
            at = rng.choice(section_words)
            (old,) = struct.unpack_from("<q", data, at)
            new = rng.choice(BIG) if rng.random() < 0.5 else old + rng.choice((-1, 1, 2, -2))
            struct.pack_into("<q", data, at, max(-(2 ** 63), min(2 ** 63 - 1, new)))
        elif roll < 0.8:
            at = rng.randrange(HEADER_SIZE, len(data) - 7)
            struct.pack_into("<Q", data, at, rng.choice(BIG) % 2 ** 64)
        elif roll < 0.95:
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        else:
            del data[rng.randrange(len(data)):]
    return _fix_crc(data) if len(data) >= HEADER_SIZE and rng.random() < 0.9 else bytes(data)

