"""The app's command-line arguments, checked before any Qt is loaded.

Shared by `npu-studio` (cli.py, which also runs the headless commands) and
`npu-studio-gui` (app.py): a bad path is one line and exit code 2. The
command names are here so that a mistyped command is not taken for a file.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from .verbosity import add_verbose_option

# The headless commands: one module each in cli_commands/, its help= line the --help entry.
COMMANDS = ("compile", "resume", "run", "dispatches", "npu", "simulate", "diff", "passes", "executables",
            "substitute", "variant", "profile", "compare", "trace", "extract", "module", "precision",
            "measure", "sweep", "asm", "calibrate", "backends", "graph")

USAGE = """npu-studio [FILE_OR_WORKSPACE ...] [--workspace DIR] [--self-test] [-v]
       npu-studio --screenshot OUT.png [--size WxH] [--all-docks] [--raise-dock NAME] [--phase P] [--select-dispatch N] FILE_OR_WORKSPACE
       npu-studio [-v|-vv] COMMAND [ARGS ...]
       npu-studio --version"""


def add_app_options(parser) -> None:
    parser.add_argument("--workspace", type=Path, metavar="DIR",
                        help="workspace folder for the (single) model opened")
    parser.add_argument("--self-test", action="store_true",
                        help="open the example, compile, index and run the NPU pipeline, then exit "
                             "(0 when all of it worked); runs offscreen when there is no display")
    shot = parser
    shot.add_argument("--screenshot", type=Path, metavar="OUT.png",
                      help="open the one model or workspace given (compiling or reopening it), lay out, "
                           "grab the window into OUT.png and exit (0 when it was written)")
    shot.add_argument("--size", metavar="WxH", default="1600x1000",
                      help="window size for --screenshot (default 1600x1000)")
    shot.add_argument("--all-docks", action="store_true", help="with --screenshot: open every dock")
    shot.add_argument("--phase", metavar="P", help="with --screenshot: the phase to show (default flow)")
    shot.add_argument("--raise-dock", metavar="NAME",
                      help="with --screenshot: show this dock on top of its tabs (its object name, e.g. graph_dock)")
    shot.add_argument("--select-dispatch", type=int, metavar="N",
                      help="with --screenshot: select dispatch N (table, IR and schedule follow)")


def parse_size(text: str) -> tuple[int, int]:
    """`1280x800` -> (1280, 800); anything else is a one-line error (exit 2)."""
    w, sep, h = text.lower().partition("x")
    if not sep or not w.isdigit() or not h.isdigit() or not (200 <= int(w) <= 10000 and 200 <= int(h) <= 10000):
        fail(f"--size {text}: expected WIDTHxHEIGHT in pixels, 200 to 10000 each (e.g. 1280x800)")
    return int(w), int(h)


def fail(message: str) -> None:
    """Bad input: one line, exit code 2 (argparse would add its usage lines)."""
    say(f"npu-studio: error: {message}")
    raise SystemExit(2)


def say(line: str) -> None:
    """One line on stderr; file names with undecodable bytes are shown escaped, never crash the print."""
    print(line.encode("utf-8", "backslashreplace").decode("utf-8"), file=sys.stderr, flush=True)


def parse_app_args(argv: list[str]) -> argparse.Namespace:
    """The app's arguments, checked before any Qt is loaded: a bad path is one line and exit 2."""
    parser = argparse.ArgumentParser(prog="npu-studio", usage=USAGE)
    parser.add_argument("paths", nargs="*", type=Path, metavar="FILE_OR_WORKSPACE")
    add_app_options(parser)
    add_verbose_option(parser)
    args = parser.parse_args(argv)
    for path in args.paths:
        if path.exists():
            continue
        if not path.suffix and os.sep not in str(path):
            fail(f"'{path}' is neither a command nor a file (commands: {', '.join(COMMANDS)})")
        fail(f"{path}: no such file or directory")
    if args.workspace is not None and len(args.paths) != 1:
        fail("--workspace needs exactly one model to open")
    if args.self_test and args.paths:
        fail("--self-test opens the bundled example; give no paths with it")
    args.window_size = parse_size(args.size)
    if args.screenshot is not None:
        if len(args.paths) != 1:
            fail("--screenshot needs exactly one model or workspace to open")
        if args.screenshot.suffix.lower() != ".png":
            fail(f"{args.screenshot}: --screenshot writes a PNG; give a name ending in .png")
        if not args.screenshot.resolve().parent.is_dir():
            fail(f"{args.screenshot}: no such folder: {args.screenshot.resolve().parent}")
    elif args.all_docks or args.raise_dock or args.phase or args.select_dispatch is not None:
        fail("--all-docks, --raise-dock, --phase and --select-dispatch go with --screenshot")
    return args
