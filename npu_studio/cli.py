"""`npu-studio` command line: one subcommand module per command in cli_commands/."""

from __future__ import annotations

import argparse
import importlib
import signal
import sys
import threading

from .core.errors import StudioError, format_error

# Each module has add_parser(subparsers) and run(args) -> exit code.
COMMANDS = ("compile", "resume", "run", "dispatches", "npu")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="npu-studio",
        description="Compile models with IREE phase by phase, inspect dispatches, plan them for an NPU.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMANDS:
        module = importlib.import_module(f"npu_studio.cli_commands.{name.replace('-', '_')}")
        module.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one command; every StudioError becomes one line on stderr and exit code 2.

    Ctrl+C (and SIGTERM) cancel whatever runs (child processes are killed,
    the workspace keeps its previous state), print one line and exit 130
    (143 for SIGTERM).
    """
    from .core.processes import Terminated, terminate_as_interrupt

    restore = None
    if threading.current_thread() is threading.main_thread():
        restore = signal.getsignal(signal.SIGTERM)
        terminate_as_interrupt()
    try:
        args = build_parser().parse_args(argv)
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
    finally:
        if restore is not None:
            signal.signal(signal.SIGTERM, restore)


def say(line: str) -> None:
    """One line on stderr; file names with undecodable bytes are shown escaped, never crash the print."""
    line = line.encode("utf-8", "backslashreplace").decode("utf-8")
    print(line, file=sys.stderr, flush=True)


if __name__ == "__main__":
    sys.exit(main())
