"""The compiler's phase list, in pipeline order.

These are the values `iree-compile --compile-to/--compile-from` accepts
(tests/core/test_phases.py checks them against `iree-compile --help`).
`start` and `end` are pseudo-phases: the input as given and the finished
module. The twelve in between are the ones `--dump-compilation-phases-to`
writes a snapshot for.
"""

from __future__ import annotations

PHASES: tuple[str, ...] = (
    "start",
    "input",
    "abi",
    "preprocessing",
    "global-optimization",
    "dispatch-creation",
    "flow",
    "stream",
    "executable-sources",
    "executable-configurations",
    "executable-targets",
    "hal",
    "vm",
    "end",
)

# Phases that leave a snapshot on disk.
SNAPSHOT_PHASES: tuple[str, ...] = PHASES[1:-1]


def phase_index(phase: str) -> int:
    """Position of `phase` in PHASES; raises ValueError naming the valid ones."""
    try:
        return PHASES.index(phase)
    except ValueError:
        raise ValueError(
            f"unknown phase {phase!r}; expected one of: {', '.join(PHASES)}"
        ) from None


def phases_after(phase: str) -> tuple[str, ...]:
    """Snapshot phases a compile started from `phase` regenerates."""
    i = phase_index(phase)
    return tuple(p for p in SNAPSHOT_PHASES if PHASES.index(p) > i)
