"""Backends that fail, for the one-line error tests (registered by monkeypatching the entry points)."""

from __future__ import annotations

import dataclasses

from npu_studio.core.npu.backend import registry
from npu_studio.core.npu.backend.rules import RuleSet


def raises_on_load():
    raise RuntimeError("the vendor SDK is not installed")


def not_a_backend():
    return {"name": "dict"}


def rule_raises():
    rules = RuleSet()

    @rules.rule("boom", "explodes")
    def _boom(plan, target):
        """Always raises."""
        raise ZeroDivisionError("division by zero in the vendor's rule")

    generic = registry.load("generic")
    return dataclasses.replace(registry.load("generic"), name="raising", rules=rules,
                               tile_cycles=generic.tile_cycles)
