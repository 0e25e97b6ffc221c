"""Legality rules as data: one rule, one text, one check (Vela's form).

A backend keeps its rules in a `RuleSet` and writes each as a small function
under `@rules.rule(...)` whose docstring is the constraint's text; it
returns None when the dispatch passes and the offending value when it does
not. A fallback names the rule and the value:

    Dispatch #7 not supported: dynamic shape (dim 0 of input 0 is ?)

The supported-operators document is generated from a backend's rules
(`report/supported_ops.py`), so it cannot drift from the checks. Rules run
in the order they were registered; the first failure decides.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterator

from ..target.target import NpuTarget

ALL_UNITS = ("mac", "vector", "dma", "cpu")
LEGALIZE, TILE = "npu-legalize", "npu-tile"  # the passes that check rules


@dataclass(frozen=True)
class Rule:
    id: str
    name: str  # short, for the reason line: "dynamic shape"
    units: tuple[str, ...]  # dispatches it applies to, by NPU unit
    check: Callable[[Any, NpuTarget], "str | None"]  # (plan.dispatch_plan.DispatchPlan, target)
    pass_: str = LEGALIZE  # the pass that checks it

    @property
    def text(self) -> str:
        return " ".join((self.check.__doc__ or "").split())

    def reason(self, value: str) -> str:
        return f"{self.name} ({value})"


class RuleSet:
    """A backend's legality rules, in checking order."""

    def __init__(self, rules: "tuple[Rule, ...] | list[Rule]" = ()):
        self._rules: list[Rule] = list(rules)

    def rule(self, id: str, name: str, units=ALL_UNITS, pass_: str = LEGALIZE):
        """Decorator: the function (docstring = the rule's text) becomes the next rule."""
        def register(fn):
            if any(r.id == id for r in self._rules):
                raise ValueError(f"rule {id!r} registered twice")
            self._rules.append(Rule(id, name, tuple(units), fn, pass_))
            return fn
        return register

    def extended(self, other: "RuleSet") -> "RuleSet":
        """These rules, then `other`'s (a backend that adds rules to another's)."""
        return RuleSet(self._rules + list(other))

    def __iter__(self) -> Iterator[Rule]:
        return iter(self._rules)

    def __len__(self) -> int:
        return len(self._rules)

    def check(self, plan, target: NpuTarget, pass_: str) -> bool:
        """Run the rules that `pass_` checks on `plan`, in order; the first that fails
        sets `plan.rule` and `plan.reason`. False when one failed."""
        for r in self._rules:
            if r.pass_ != pass_ or plan.unit not in r.units:
                continue
            value = r.check(plan, target)
            if value is not None:
                plan.rule, plan.reason = r.id, r.reason(value)
                return False
        return True
