"""Helpers shared by the subcommands."""

from __future__ import annotations

import sys

from ..core.compiler import TARGETS


def add_target_option(parser) -> None:
    parser.add_argument("--target", choices=TARGETS, default=None,
                        help="HAL backend (default llvm-cpu for the host CPU)")


def progress_printer(enabled: bool):
    """A progress callback that prints finished phases to stderr (only on a terminal)."""
    if not enabled:
        return None

    def report(done, running):
        if done:
            print(f"  done {done}", file=sys.stderr, flush=True)

    return report


def human_size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")
