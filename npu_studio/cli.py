"""`npu-studio` command line: one subcommand module per command in cli_commands/."""

from __future__ import annotations

import argparse
import importlib
import sys

from .core.errors import StudioError

# Each module has add_parser(subparsers) and run(args) -> exit code.
COMMANDS = ("compile", "resume", "run", "dispatches", "npu", "executables", "substitute")


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
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except StudioError as exc:
        print(f"npu-studio: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("npu-studio: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
