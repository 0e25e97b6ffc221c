"""npu-studio backends: the installed NPU backends, with their versions (docs/npu-backends.md)."""

from __future__ import annotations

import sys


def add_parser(sub) -> None:
    p = sub.add_parser("backends", help="list the installed NPU backends and their versions",
                       description="List the NPU backends installed in the `npu_studio.backends` entry point "
                                   "group: name, version, the package that registers it, and what it provides.")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..core.npu.backend import registry

    broken = 0
    for item in registry.installed():
        if item.problem:
            broken += 1
            sys.stdout.write(f"{item.name}  (cannot load: {item.problem})\n")
            continue
        b = registry.load(item.name)
        has = [h for h in ("emit", "runner", "loader") if getattr(b, h) is not None]
        sys.stdout.write(f"{item.name} {item.version}  package {item.package}; {len(b.rules)} rules"
                         + (f"; {', '.join(has)}" if has else "") + (f"  {b.description}" if b.description else "")
                         + "\n")
    return 2 if broken else 0
