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


def _generic(name: str, **hooks):
    return dataclasses.replace(registry.load("generic"), name=name, **hooks)


def emit_returns_text():
    return _generic("emit-text", emit=lambda program: "MOV r0, r1\n")


def emit_tags_past_its_text():
    from npu_studio.core.npu.backend.api import Emitted, EmittedLine

    return _generic("emit-tags", emit=lambda program: Emitted("NOP\n", b"\0" * 4, (EmittedLine(7, 0, 0, 0, 4),)))


def cost_is_negative():
    return _generic("cost-negative", tile_cycles=lambda *args: -7)


def cost_is_nan():
    return _generic("cost-nan", tile_cycles=lambda *args: float("nan"))


def cost_raises():
    def cost(*args):
        raise KeyError("macs")
    return _generic("cost-raises", tile_cycles=cost)


class _BoardOffline:
    def run(self, call):
        raise ConnectionError("the board does not answer")


def runner_raises():
    return _generic("runner-raises", runner=_BoardOffline())


class _Segfaults:
    """A runner whose native code crashes the process it runs in (a vendor simulator's bug)."""

    def run(self, call):
        import ctypes

        ctypes.string_at(0)


def runner_segfaults():
    return _generic("runner-segfaults", runner=_Segfaults())


class _NeverAnswers:
    """A runner waiting on a board that never replies."""

    def run(self, call):
        import threading

        threading.Event().wait()


def runner_hangs():
    return _generic("runner-hangs", runner=_NeverAnswers())
