"""npu-studio asm SOURCE [--backend NAME] [--dispatch N] [--out FILE] [--binary FILE] [--target FILE]

A planned program in its backend's assembly and binary: SOURCE is a workspace, a model or a
model.npu.json, emitted by the backend it was planned for (a workspace's recorded one, or
--backend: planned for it first). The generic NPU's own listings (docs/npu-isa.md) are read
too: an assembly text `.npus` (assembled) or a binary `.npub` (disassembled). The text goes to
--out (default: standard output), the binary to --binary. Nothing is written unless all of it
succeeded.
"""

from __future__ import annotations

import sys
from pathlib import Path

from ..core.errors import StudioError
from .common import add_backend_option

TEXT_SUFFIXES = (".npus", ".s", ".asm")
BINARY_SUFFIX = ".npub"


def add_parser(sub) -> None:
    p = sub.add_parser("asm", help="the NPU program as its backend's assembly and binary (docs/npu-isa.md)",
                       description="Emit the planned NPU program of a workspace, model or model.npu.json as its "
                                   "backend's assembly text (each instruction tagged with its dispatch and task) and "
                                   "binary; or assemble a generic NPU .npus text, or disassemble a .npub binary.")
    p.add_argument("source", type=Path, metavar="WORKSPACE",
                   help="a workspace, model or model.npu.json; or a .npus assembly text; or a .npub binary")
    p.add_argument("--dispatch", type=int, default=None, metavar="N",
                   help="only dispatch N, as a program of its own (its dependencies on other dispatches met)")
    p.add_argument("--out", type=Path, default=None, metavar="FILE",
                   help="write the assembly text here (default: standard output)")
    p.add_argument("--binary", type=Path, default=None, metavar="FILE",
                   help="write the binary encoding here")
    p.add_argument("--target", dest="npu_target", default=None, metavar="FILE",
                   help="NPU target TOML to plan a workspace or model for first (default: its NPU program)")
    add_backend_option(p)
    p.set_defaults(func=run)


def _read_assembly(source: Path, dispatch: int | None):
    from ..core.npu.isa import from_binary, from_text, looks_binary
    from ..core.textio import decode, read_bytes

    data = read_bytes(source)
    if looks_binary(data) or source.suffix == BINARY_SUFFIX:
        listing = from_binary(data, source)
    else:
        listing = from_text(decode(data, source), source)
    if dispatch is not None:
        raise StudioError(source, "--dispatch selects from a program; this is an assembled listing already")
    return listing


def run(args) -> int:
    from ..core.textio import check_output_file, write_bytes_atomic, write_text_atomic

    for out in (args.out, args.binary):
        if out:
            check_output_file(out)
    source = args.source
    is_listing = source.is_file() and (source.suffix in TEXT_SUFFIXES + (BINARY_SUFFIX,)
                                       or _starts_with_magic(source))
    if is_listing:
        if args.backend or args.npu_target:
            raise StudioError(source, "an assembled listing is the generic NPU's already: --backend and --target "
                                      "plan a workspace, model or model.npu.json")
        text, binary, count = _listing(_read_assembly(source, args.dispatch), source)
    else:
        text, binary, count = _emitted(args)
    if args.binary:
        write_bytes_atomic(args.binary, binary)
    if args.out:
        write_text_atomic(args.out, text)
    else:
        sys.stdout.write(text)
    if args.out or args.binary:
        print(f"{count:,} tagged instructions, {len(binary):,} bytes"
              + (f"; text {args.out}" if args.out else "") + (f"; binary {args.binary}" if args.binary else ""),
              file=sys.stderr if not args.out else sys.stdout)
    return 0


def _listing(listing, source: Path) -> tuple[str, bytes, int]:
    """(text, binary, tagged instructions): the count an emitter's tagged lines give, whichever way in."""
    try:
        binary = listing.binary()
    except ValueError as e:  # an instruction the encoding cannot hold (a value beyond 64 bits, ...)
        raise StudioError(source, f"cannot encode: {e}") from None
    return listing.text(), binary, sum(1 for dispatch, _task in listing.tags() if dispatch is not None)


def _emitted(args) -> tuple[str, bytes, int]:
    """(text, binary, instructions) of the program's backend's emitter (checked by the registry:
    a backend whose emitter raises or returns nonsense is one line naming it)."""
    from ..core.npu.backend import registry
    from ..core.npu.backend.api import GENERIC, BackendError
    from .simulate import load_source

    source = args.source
    program, _, _ = load_source(source, args.npu_target, args.backend)
    backend = registry.backend_of(program.target)
    if args.dispatch is not None and args.dispatch not in {d.index for d in program.dispatches}:
        raise StudioError(source, f"--dispatch {args.dispatch}: no such dispatch (the program has "
                                  f"{len(program.dispatches)})")
    if backend.emit is None:
        raise BackendError(backend.name, "has no emitter: there is no assembly to write")
    if args.dispatch is not None and backend.name == GENERIC:
        from ..core.npu.isa import program_assembly
        from ..core.npu.isa.emit import EmitError

        try:  # the generic NPU emits one dispatch as a program of its own
            return _listing(program_assembly(program, args.dispatch), source)
        except EmitError as e:
            raise StudioError(source, e.reason) from None
    emitted = backend.emit(program)
    if args.dispatch is None:
        return emitted.assembly, bytes(emitted.binary), len(emitted.lines)
    if args.binary:
        raise StudioError(args.binary, f"the NPU backend {backend.name!r} emits whole programs: --binary with "
                                       "--dispatch has no binary of one dispatch to write")
    tags = emitted.lines_of(args.dispatch)
    lines = emitted.assembly.splitlines()
    return "".join(lines[t.line - 1] + "\n" for t in tags), b"", len(tags)


def _starts_with_magic(path: Path) -> bool:
    from ..core.npu.isa.spec import MAGIC

    try:
        with open(path, "rb") as f:
            return f.read(len(MAGIC)) == MAGIC
    except OSError:
        return False
