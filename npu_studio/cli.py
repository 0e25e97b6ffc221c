"""`npu-studio`: the one command, like `code FILE` or `napari FILE`.

    npu-studio [FILE_OR_WORKSPACE ...]   open the app (no arguments: the welcome page)
    npu-studio COMMAND ...               run a headless command (one module per command in cli_commands/)
    npu-studio --version | --help
    -v / -vv, before or after COMMAND: each tool run logged on stderr (verbosity.py)

The headless part never imports Qt: the app is loaded by name only when a
window is asked for (see `open_app`).
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import importlib
import os
import runpy
import signal
import sys
import threading

from .app_args import COMMANDS, USAGE, add_app_options, parse_app_args, say
from .core.errors import StudioError, format_error, os_error
from .core.processes import RUN_MODULE_FLAG
from .core.versions import version_text
from .verbosity import add_verbose_option, leading_verbosity, stderr_logging

TOP_LEVEL_FLAGS = ("-h", "--help", "--version")


class OneLineErrors(argparse.ArgumentParser):
    """Bad arguments in one line naming the value and what was expected, exit code 2 (argparse's own
    error prints the whole usage first: a page of choices before the reason)."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (`{self.prog} --help` lists the options)\n")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or of `only` that one (importing one command's module, not all)."""
    parser = OneLineErrors(
        prog="npu-studio", usage=USAGE,
        description="Compile models with IREE phase by phase, inspect dispatches, plan them for an NPU. "
                    "Without a command, opens the app (on the given models or workspace folders); "
                    "with one, runs it headless. `npu-studio COMMAND --help` describes a command.",
    )
    parser.add_argument("--version", action="store_true",
                        help="print the versions of npu-studio, the IREE compiler and the IREE runtime")
    add_verbose_option(parser)
    # Documented here, parsed by parse_app_args: a FILE positional beside COMMAND would be ambiguous.
    app = parser.add_argument_group("opening the app", "FILE_OR_WORKSPACE: models (.onnx, .mlir, .mlirbc) "
                                    "or workspace folders to open, one window each")
    add_app_options(app)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands (headless)", prog="npu-studio")
    for name in COMMANDS if only is None else [only]:  # each module: add_parser(subparsers), run(args)
        module = importlib.import_module(f"npu_studio.cli_commands.{name.replace('-', '_')}")
        module.add_parser(sub)
    for command in {id(p): p for p in sub.choices.values()}.values():  # after the command name too
        add_verbose_option(command)
        command.add_argument("--trust", action="store_true",
                             help="trust the workspace for this run: let it run what it holds (its modules, "
                                  "its variants' recorded compilers and flags), even if it was not created "
                                  "here; nothing is recorded")
    return parser


def run_module(argv: list[str]) -> int:
    """`npu-studio --run-module MODULE ARGS...`: `python -m MODULE` for a frozen bundle
    (there `sys.executable` is this launcher, which has no `-m`)."""
    if not argv or not argv[0].startswith("npu_studio."):
        print(f"npu-studio: error: {RUN_MODULE_FLAG} takes a module of npu_studio", file=sys.stderr)
        return 2
    sys.argv = list(argv)
    try:
        runpy.run_module(argv[0], run_name="__main__", alter_sys=True)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return 0


def open_app(argv: list[str]) -> int:
    args = parse_app_args(argv)
    # Loaded by name: the command line never imports the Qt layer unless a window is wanted.
    app = importlib.import_module("npu_studio.app")
    return app.run(args)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == [RUN_MODULE_FLAG]:
        return run_module(argv[1:])
    verbose, rest = leading_verbosity(argv)  # `npu-studio -v compile MODEL`
    if not rest or (rest[0] not in COMMANDS and rest[0] not in TOP_LEVEL_FLAGS):
        return open_app(argv)  # the app's parser takes -v wherever it is
    args = build_parser(rest[0] if rest[0] in COMMANDS else None).parse_args(rest)
    with stderr_logging(verbose + args.verbose):
        if args.version:
            print(version_text())
            return 0
        if args.command is None:  # e.g. `npu-studio --version` was not it and no command followed
            build_parser().print_help()
            return 2
        return run_command(args)


# Writes the file system refused, reported in one line wherever they happen (what was published
# before stays: every workspace write is staged and published atomically, transaction.py).
_DISK_ERRNOS = {errno.EROFS: "", errno.ENOSPC: "", errno.EDQUOT: "", errno.EACCES: "", errno.EPERM: "",
                errno.E2BIG: " (a command line too long: a build variant with too many recorded flags?)"}


def run_command(args) -> int:
    """Run one command; every StudioError becomes one line on stderr and exit code 2.

    Ctrl+C (and SIGTERM) cancel whatever runs (child processes are killed,
    the workspace keeps its previous state), print one line and exit 130
    (143 for SIGTERM); inside a long native call the watchdog ends the
    process after a second (core/processes.py, SignalWatchdog).
    """
    from .core.npu.store.all_or_nothing import all_or_nothing
    from .core.processes import SignalWatchdog, Terminated

    for stream in (sys.stdout, sys.stderr):  # a file name that is not UTF-8 prints escaped, never crashes
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    main_thread = threading.current_thread() is threading.main_thread()
    lines = {signal.SIGINT: "npu-studio: interrupted", signal.SIGTERM: "npu-studio: terminated"}
    watchdog = SignalWatchdog(lines.get) if main_thread else contextlib.nullcontext()
    if getattr(args, "trust", False):
        from .core.workspace import trust

        trust.trust_this_run()
    try:
        with watchdog, all_or_nothing():  # a command that fails leaves the workspace's NPU results as they were
            return args.func(args)
    except StudioError as exc:
        say(format_error(exc))
        return 2
    except Terminated:
        say("npu-studio: terminated")
        return 143
    except KeyboardInterrupt:
        say("npu-studio: interrupted")
        return 130
    except BrokenPipeError:  # the reader of our output went away (`| head`): stop quietly, as other tools do
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # so the flush at exit does not fail again
        return 141  # 128 + SIGPIPE, what a shell reports for a tool stopped by a closed pipe
    except OSError as exc:  # the file system refused a write: read-only, full, not ours
        if exc.errno not in _DISK_ERRNOS:
            raise
        why = _DISK_ERRNOS[exc.errno]
        doing = "cannot run" if exc.errno == errno.E2BIG else "cannot write"
        named = os_error(exc.filename or "-", exc, doing)
        say(format_error(named if exc.filename else StudioError(None, named.reason + why)))
        return 2


if __name__ == "__main__":
    sys.exit(main())
