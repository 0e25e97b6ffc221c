"""npu-studio asm SOURCE [--dispatch N] [--out FILE] [--binary FILE] [--target FILE]

The generic NPU's assembly (docs/npu-isa.md). SOURCE is a workspace, a model or a
model.npu.json (its planned program is emitted), an assembly text `.npus` (assembled) or a
binary `.npub` (disassembled). The text goes to --out (default: standard output), the
binary to --binary. Nothing is written unless all of it succeeded.
"""

from __future__ import annotations

import sys
from pathlib import Path

from ..core.errors import StudioError

TEXT_SUFFIXES = (".npus", ".s", ".asm")
BINARY_SUFFIX = ".npub"


def add_parser(sub) -> None:
    p = sub.add_parser("asm", help="the NPU program as the generic NPU's assembly and binary (docs/npu-isa.md)",
                       description="Emit the planned NPU program of a workspace, model or model.npu.json as "
                                   "assembly text (each instruction tagged with its dispatch and task) and as a "
                                   "binary; or assemble a .npus text, or disassemble a .npub binary.")
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
    from ..core.npu.isa import program_assembly
    from ..core.npu.isa.emit import EmitError
    from ..core.textio import check_output_file, write_bytes_atomic, write_text_atomic
    from .simulate import load_source

    for out in (args.out, args.binary):
        if out:
            check_output_file(out)
    source = args.source
    is_listing = source.is_file() and (source.suffix in TEXT_SUFFIXES + (BINARY_SUFFIX,)
                                       or _starts_with_magic(source))
    if is_listing:
        listing = _read_assembly(source, args.dispatch)
    else:
        program, _, _ = load_source(source, args.npu_target)
        if args.dispatch is not None and args.dispatch not in {d.index for d in program.dispatches}:
            raise StudioError(source, f"--dispatch {args.dispatch}: no such dispatch (the program has "
                                      f"{len(program.dispatches)})")
        try:
            listing = program_assembly(program, args.dispatch)
        except EmitError as e:
            raise StudioError(source, e.reason) from None
    text = listing.text()
    try:
        binary = listing.binary()
    except ValueError as e:  # an instruction the encoding cannot hold (a value beyond 64 bits, ...)
        raise StudioError(source, f"cannot encode: {e}") from None
    if args.binary:
        write_bytes_atomic(args.binary, binary)
    if args.out:
        write_text_atomic(args.out, text)
    else:
        sys.stdout.write(text)
    if args.out or args.binary:
        print(f"{len(listing.instructions)} instructions, {len(binary):,} bytes"
              + (f"; text {args.out}" if args.out else "") + (f"; binary {args.binary}" if args.binary else ""),
              file=sys.stderr if not args.out else sys.stdout)
    return 0


def _starts_with_magic(path: Path) -> bool:
    from ..core.npu.isa.spec import MAGIC

    try:
        with open(path, "rb") as f:
            return f.read(len(MAGIC)) == MAGIC
    except OSError:
        return False
