"""Helpers shared by the subcommands."""

from __future__ import annotations

import sys

from ..core.compile.options import TARGETS
from ..core.compile.params import DEFAULT_THRESHOLD_BYTES, ParamOptions
from ..core.units import format_bytes


def add_target_option(parser) -> None:
    parser.add_argument("--target", choices=TARGETS, default=None,
                        help="HAL backend (default llvm-cpu for the host CPU)")


def add_params_options(parser) -> None:
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--params-threshold", type=int, metavar="BYTES", default=DEFAULT_THRESHOLD_BYTES,
                       help="ONNX weights of at least this many bytes go to the workspace's params.irpa "
                            f"and the IR names them (default {DEFAULT_THRESHOLD_BYTES})")
    group.add_argument("--inline-weights", action="store_true",
                       help="keep every weight inline in the IR (every phase snapshot then prints them)")


def params_options(args) -> ParamOptions | None:
    if args.inline_weights:
        return None
    if args.params_threshold < 1:
        from ..core.errors import StudioError

        raise StudioError(None, f"--params-threshold must be at least 1 byte, got {args.params_threshold}")
    return ParamOptions(threshold_bytes=args.params_threshold)


def progress_printer(enabled: bool):
    """A progress callback that prints finished phases to stderr (only on a terminal)."""
    if not enabled:
        return None

    def report(done, running):
        if done:
            print(f"  done {done}", file=sys.stderr, flush=True)

    return report


def human_size(n: int) -> str:
    return format_bytes(n)


def add_backend_option(parser) -> None:
    parser.add_argument("--backend", default=None, metavar="NAME",
                        help="NPU backend (`npu-studio backends` lists them; default: the one a workspace "
                             "records, else the generic NPU)")


def npu_target(backend_name: str | None, target_path):
    """The NPU target for `--backend` and `--target` (None: the backend's default); None when
    neither was given. BackendError names a missing or broken backend, TargetError file:line: key."""
    if backend_name is None and target_path is None:
        return None
    from ..core.npu.backend import registry
    from ..core.npu.target.target import target_file

    backend = registry.load(backend_name)
    return registry.load_target(backend, target_file(target_path) if target_path is not None else None)
