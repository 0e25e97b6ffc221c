"""npu-studio substitute WORKSPACE --executable NAME (--source FILE | --configuration FILE) ...

Also `--list`, `--remove NAME`, `--off NAME`, `--on NAME`. Exit code 1 when
the numeric gate does not pass (FAIL, or CANNOT TELL: a flat reference), 2 on bad input.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ..core.errors import StudioError
from ..core.run.kernel_timing import MAX_REPETITIONS, MAX_SECONDS, MIN_REPETITIONS, TARGET_SPREAD
from ..core.run.numeric_gate import DEFAULT_TOLERANCE
from ..core.run.substitute_workflow import (TimingRequest, remove_substitution, substitute_and_check,
                                            switch_substitution)
from ..core.workspace import substitutions as sub_records
from ..core.workspace.workspace import Workspace
from .common import progress_printer
from .executables import substitution_label


def add_parser(sub) -> None:
    p = sub.add_parser("substitute", help="swap an edited executable into the build; compare and time it",
                       description="Substitute an edited executable source or configuration, rebuild from the "
                                   "latest phase that still applies it, then compare the outputs with the build "
                                   "without substitutions and time the executable. Exit code 1 if the "
                                   "comparison fails or cannot tell (the plain output is flat).")
    p.add_argument("workspace", type=Path)
    action = p.add_mutually_exclusive_group(required=True)
    action.add_argument("--executable", metavar="NAME", help="hal.executable to substitute (see `executables`)")
    action.add_argument("--list", action="store_true", help="list the workspace's substitutions")
    action.add_argument("--remove", metavar="NAME", help="drop the substitutions of NAME and rebuild")
    action.add_argument("--off", metavar="NAME", help="switch a substitution off (kept) and rebuild")
    action.add_argument("--on", metavar="NAME", help="switch a substitution on again and rebuild")
    text = p.add_mutually_exclusive_group()
    text.add_argument("--source", type=Path, metavar="FILE", help="edited executable source (.mlir)")
    text.add_argument("--configuration", type=Path, metavar="FILE", help="edited configured executable (.mlir)")
    p.add_argument("--kind", choices=sub_records.KINDS, help="with --remove/--off/--on: which substitution of NAME")
    p.add_argument("--input", action="append", type=Path, default=[], metavar="X.NPY",
                   help=".npy input, once per argument")
    p.add_argument("--tolerance", type=float, default=DEFAULT_TOLERANCE, metavar="T",
                   help="an element fails when |diff| > T * max(1, largest |plain|) (default: from the element "
                        "types the program computes in, docs/model-debugging.md)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    p.add_argument("--repetitions", type=int, default=MIN_REPETITIONS, metavar="N",
                   help=f"time at least N repetitions each, more until the spread (IQR / median) is under "
                        f"{TARGET_SPREAD:.0%}% (default {MIN_REPETITIONS}; 0: no timing)")
    p.add_argument("--max-repetitions", type=int, default=MAX_REPETITIONS, metavar="M",
                   help=f"stop a timing that has not settled after M repetitions (default {MAX_REPETITIONS}) "
                        f"or {MAX_SECONDS:g} s")
    p.add_argument("--json", action="store_true", help="print the comparison and timing as JSON")
    p.set_defaults(func=run)


def run(args) -> int:
    ws = Workspace.open(args.workspace)
    progress = progress_printer(sys.stderr.isatty() and not args.json)
    if args.list:
        return _list(ws, args.json)
    if args.remove or args.off or args.on:
        name = args.remove or args.off or args.on
        if args.remove:
            remove_substitution(ws, name, args.kind, on_phase=progress)
        else:
            switch_substitution(ws, name, _kind_of(ws, name, args.kind), bool(args.on), on_phase=progress)
        return _list(ws, args.json)
    if (args.source or args.configuration) is None:
        raise StudioError(None, "--executable needs --source FILE or --configuration FILE")
    kind = sub_records.SOURCE if args.source else sub_records.CONFIGURATION
    timing = TimingRequest(args.repetitions, args.max_repetitions) if args.repetitions > 0 else None
    outcome = substitute_and_check(ws, args.executable, kind, args.source or args.configuration,
                                   input_files=args.input or None, tolerance=args.tolerance, seed=args.seed,
                                   timing=timing, on_phase=progress)
    if args.json:
        print(json.dumps({"executable": args.executable, "kind": kind, "comparison": outcome.gate.to_json(),
                          "timing": outcome.timing.to_json() if outcome.timing else None}, indent=2))
    else:
        print(outcome.gate.format())
        if outcome.timing is not None:
            print(outcome.timing.format())
    return 0 if outcome.gate.passed else 1


def _kind_of(ws, name: str, kind: str | None) -> str:
    kinds = [s.kind for s in sub_records.load(ws) if s.name == name and s.file]
    if kind is None and len(kinds) == 1:
        return kinds[0]
    if kind is None:
        raise StudioError(ws.root, f"@{name} has {len(kinds) or 'no'} built substitutions; pass --kind")
    return kind


def _list(ws, as_json: bool) -> int:
    items = sub_records.load(ws)
    if as_json:
        print(json.dumps([vars(s) for s in items], indent=2))
    elif not items:
        print("no substitutions")
    for s in items if not as_json else ():
        print(f"{s.name}: {substitution_label(s)}  {s.file or s.draft}")
    return 0
