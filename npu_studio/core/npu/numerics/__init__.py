"""Functional simulation of the NPU program: the numbers it computes, checked.

No Qt. `check(workspace, program)` is the entry point (see docs/npu-sim-check.md).
"""

from .check import CheckReport, Comparison, check
from .functional_sim import DispatchOutcome, FunctionalSim, TileFault

__all__ = ["check", "CheckReport", "Comparison", "DispatchOutcome", "FunctionalSim", "TileFault"]
