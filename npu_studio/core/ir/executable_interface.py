"""Fitting an edited `hal.executable` to the interface another build gives the same executable.

IREE's executable dumps carry what the build they came from decided about
buffers: each `hal.interface.binding.subspan` has that build's byte
`offset(...)` into its binding (folded to a constant when every call site
agrees), its binding `flags`, and the pipeline `layout`. A substitution
made from the workspace's build keeps them; swapped into a build that lays
its buffers out otherwise (the one-function-per-dispatch module, a build
with dispatch tensor tracing, a build broken after a dispatch) it reads and
writes the wrong bytes.

`rebase(substituted, target, name)` keeps everything the user wrote and
takes the interface from `target`, the same executable as that other build
dumped it: every export's layout, and every subspan's layout, flags and
offset (matched by function, binding and order). An offset the target
reads from push constants is computed here by a copy of the target's own
ops (its host passes the values they expect). It refuses, with the reason
(`NotRebasable`), when the two do not describe the same buffers: another
export or function, another number of subspans of a binding, another
tensor type, or other push-constant reads the target lays out otherwise.
"""

from __future__ import annotations

from iree.compiler import ir

from .context import mlir_context

SUBSPAN = "hal.interface.binding.subspan"
_PURE_PREFIXES = ("arith.", "index.", "affine.apply", "hal.interface.constant.load", "util.assume.")


class NotRebasable(ValueError):
    """The substituted executable cannot be fitted to the target's interface; str() says why."""


def _symbol(op: ir.Operation) -> str:
    return ir.StringAttr(op.attributes["sym_name"]).value


def _constants(layout: ir.Attribute) -> str:
    """The push-constant part of a pipeline layout's text (`constants = N`, or none)."""
    text = str(layout)
    return text[text.index("constants"):].split(",")[0] if "constants" in text else "constants = 0"


def _executable(module: ir.Module, name: str, which: str) -> ir.Operation:
    for op in module.body.operations:
        op = op.operation
        if op.name == "hal.executable" and _symbol(op) == name:
            return op
    raise NotRebasable(f"the {which} text defines no hal.executable @{name}")


def _children(op: ir.Operation, name: str) -> dict[str, ir.Operation]:
    return {_symbol(o.operation): o.operation for o in op.regions[0].blocks[0].operations
            if o.operation.name == name}


def _subspans(func: ir.Operation) -> dict[int, list[ir.Operation]]:
    found: dict[int, list[ir.Operation]] = {}

    def visit(op):
        op = op.operation if hasattr(op, "operation") else op
        if op.name == SUBSPAN:
            found.setdefault(ir.IntegerAttr(op.attributes["binding"]).value, []).append(op)
        return ir.WalkResult.ADVANCE

    func.walk(visit)
    return found


def _constant(value: ir.Value) -> int | None:
    owner = value.owner
    if isinstance(owner, ir.Block):
        return None
    op = owner.operation if hasattr(owner, "operation") else owner
    if op.name != "arith.constant":
        return None
    return ir.IntegerAttr(op.attributes["value"]).value


def _offset(subspan: ir.Operation) -> ir.Value | None:
    """The subspan's byte offset operand (its first operand segment), None when it has none."""
    segments = ir.DenseI32ArrayAttr(subspan.attributes["operandSegmentSizes"])
    return subspan.operands[0] if segments[0] else None


def _clone_slice(value: ir.Value, before: ir.Operation, memo: dict) -> ir.Value:
    """`value` of the target's function recomputed in ours before `before`: its ops cloned, operands first."""
    owner = value.owner
    if isinstance(owner, ir.Block):
        raise NotRebasable("the target build computes an offset from a block argument")
    op = owner.operation if hasattr(owner, "operation") else owner
    key = op
    if key not in memo:
        operands = [_clone_slice(v, before, memo) for v in op.operands]
        copy = op.clone(ip=ir.InsertionPoint(before))
        for i, v in enumerate(operands):
            copy.operands[i] = v
        memo[key] = copy
    copy = memo[key]
    index = next(i for i, r in enumerate(op.results) if r == value)
    return copy.results[index]


def _erase_dead(func: ir.Operation) -> None:
    """Drop side-effect-free ops left without users (the replaced offsets' computations)."""
    while True:
        dead = []

        def visit(op):
            op = op.operation if hasattr(op, "operation") else op
            if (op.name.startswith(_PURE_PREFIXES) and len(op.results) > 0
                    and all(not list(r.uses) for r in op.results)):
                dead.append(op)
            return ir.WalkResult.ADVANCE

        func.walk(visit)
        if not dead:
            return
        for op in dead:
            op.erase()


def _rebase_function(name: str, mine: ir.Operation, theirs: ir.Operation, same_constants: bool) -> None:
    ours, target = _subspans(mine), _subspans(theirs)
    first = mine.regions[0].blocks[0].operations[0].operation
    memo: dict = {}
    if sorted(ours) != sorted(target):
        raise NotRebasable(f"@{name} binds {sorted(ours)} here and {sorted(target)} in the target build")
    for binding, ops in ours.items():
        other = target[binding]
        if len(ops) != len(other):
            raise NotRebasable(f"@{name} views binding {binding} {len(ops)} times here, "
                               f"{len(other)} in the target build")
        for op, model in zip(ops, other):
            if str(op.results[0].type) != str(model.results[0].type):
                raise NotRebasable(f"@{name} binding {binding} is {op.results[0].type} here, "
                                   f"{model.results[0].type} in the target build")
            for attr in ("layout", "descriptor_flags", "alignment"):
                if attr in model.attributes:
                    op.attributes[attr] = model.attributes[attr]
            at, model_at = _offset(op), _offset(model)
            value = 0 if model_at is None else _constant(model_at)
            if value is None:  # read from push constants: computed here as the target computes it
                if at is None:
                    raise NotRebasable(f"@{name} binding {binding} has no offset here, one computed at run "
                                       "time in the target build")
                op.operands[0] = _clone_slice(model_at, first, memo)
                continue
            if at is None:
                if value:
                    raise NotRebasable(f"@{name} binding {binding} has no offset here, {value} in the target build")
                continue
            if _constant(at) == value:
                continue
            index = ir.IndexType.get()
            const = ir.Operation.create("arith.constant", results=[index],
                                        attributes={"value": ir.IntegerAttr.get(index, value)},
                                        loc=op.location, ip=ir.InsertionPoint(op))
            op.operands[0] = const.results[0]
    _erase_dead(mine)
    if not same_constants and _reads_constants(mine, set(memo.values())):
        raise NotRebasable(f"@{name} reads push constants, which the target build lays out otherwise")


def _reads_constants(func: ir.Operation, cloned: set) -> bool:
    found = []

    def visit(op):
        op = op.operation if hasattr(op, "operation") else op
        if op.name == "hal.interface.constant.load" and op not in cloned:
            found.append(op)
        return ir.WalkResult.ADVANCE

    func.walk(visit)
    return bool(found)


def rebase(substituted: str, target: str, name: str) -> str:
    """`substituted`'s `hal.executable @name` with the interface `target` (its dump by another build) has.

    Raises NotRebasable (why) when the two do not describe the same buffers.
    """
    ctx = mlir_context()
    with ctx:
        try:
            mine_module = ir.Module.parse(substituted)
            theirs_module = ir.Module.parse(target)
        except ir.MLIRError as exc:
            raise NotRebasable(f"cannot parse: {str(exc).splitlines()[0]}") from None
        mine, theirs = _executable(mine_module, name, "substituted"), _executable(theirs_module, name, "target")
        their_variants = _children(theirs, "hal.executable.variant")
        for vname, variant in _children(mine, "hal.executable.variant").items():
            model = their_variants.get(vname)
            if model is None:
                raise NotRebasable(f"the target build has no variant @{vname} of @{name}")
            exports, model_exports = _children(variant, "hal.executable.export"), \
                _children(model, "hal.executable.export")
            if sorted(exports) != sorted(model_exports):
                raise NotRebasable(f"@{name} exports {sorted(exports)} here, {sorted(model_exports)} in the "
                                   "target build")
            same_constants = {}
            for ename, export in exports.items():
                model_layout = model_exports[ename].attributes["layout"]
                same_constants[ename] = _constants(export.attributes["layout"]) == _constants(model_layout)
                export.attributes["layout"] = model_layout
            inner = [o.operation for o in variant.regions[0].blocks[0].operations
                     if o.operation.name == "builtin.module"]
            model_inner = [o.operation for o in model.regions[0].blocks[0].operations
                           if o.operation.name == "builtin.module"]
            if len(inner) != 1 or len(model_inner) != 1:
                raise NotRebasable(f"@{name}/@{vname} holds no single inner module to fit")
            funcs = {_symbol(o.operation): o.operation for o in inner[0].regions[0].blocks[0].operations
                     if "sym_name" in o.operation.attributes}
            model_funcs = {_symbol(o.operation): o.operation for o in model_inner[0].regions[0].blocks[0].operations
                           if "sym_name" in o.operation.attributes}
            for fname in exports:
                if fname not in funcs or fname not in model_funcs:
                    raise NotRebasable(f"no function @{fname} for export @{fname}")
                _rebase_function(fname, funcs[fname], model_funcs[fname], same_constants[fname])
        if not mine.verify():
            raise NotRebasable(f"@{name} does not verify with the target build's interface")
        return mine.get_asm(enable_debug_info=False) + "\n"
