"""Which NPU unit computes which op kind, and which vector function each body op needs.

Shared by every backend: the facts of a dispatch (`legality`) are gathered with
them, the backends' rules (`backend.rules`) read the facts.
"""

from __future__ import annotations

MAC_KINDS = ("conv", "depthwise_conv", "matmul", "batch_matmul")
VECTOR_KINDS = ("pooling", "reduction", "elementwise", "gather", "softmax")
# Body ops -> the vector-unit function that computes them.
FUNCTION_OF_OP = {
    "arith.addf": "add", "arith.addi": "add", "arith.subf": "sub", "arith.subi": "sub",
    "arith.mulf": "mul", "arith.muli": "mul", "arith.divf": "div", "arith.divsi": "div",
    "arith.divui": "div", "arith.maximumf": "max", "arith.maxnumf": "max", "arith.maxsi": "max",
    "arith.maxui": "max", "arith.minimumf": "min", "arith.minnumf": "min", "arith.minsi": "min",
    "arith.minui": "min", "arith.cmpf": "compare", "arith.cmpi": "compare",
    "arith.select": "select", "arith.negf": "neg", "math.absf": "abs", "math.absi": "abs",
    "math.exp": "exp", "math.exp2": "exp", "math.log": "log", "math.tanh": "tanh",
    "math.sqrt": "sqrt", "math.rsqrt": "rsqrt", "math.powf": "pow", "math.fpowi": "pow",
    "math.erf": "erf", "math.floor": "floor", "math.roundeven": "roundeven", "math.round": "round",
    "tensor.extract": "gather", "arith.remsi": "div", "arith.remui": "div",
    "arith.floordivsi": "div", "arith.ceildivsi": "div", "arith.sitofp": "itof", "arith.uitofp": "itof", "arith.fptosi": "ftoi", "arith.fptoui": "ftoi",
    "arith.andi": "and", "arith.ori": "or", "arith.xori": "xor", "arith.shli": "shift",
    "arith.shrsi": "shift", "arith.shrui": "shift",
}


def function_of(op_name: str) -> str:
    """The vector function a body op needs (the op's own name if none is known)."""
    return FUNCTION_OF_OP.get(op_name, op_name)
