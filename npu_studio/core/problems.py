"""The problems the app reports, each bound to the condition that raised it (no Qt).

A banner is never just text that stays until something hides it: every message is filed under
a condition (`COMPILE`, `OPEN`, `NPU`, `TARGET`, `CHANGED`, `UNREADABLE`, `GENERAL`), and the session clears
a condition when it ends (a successful compile or resume, a revert or an undo back to the
compiled text, another model, a good NPU run). The files that could not be read are gathered in one message, one per line. The window shows the newest message still
raised, and nothing when none is.
"""

from __future__ import annotations

from typing import Callable

COMPILE = "compile"  # the last compile or resume failed
OPEN = "open"  # the last open failed
CHANGED = "changed"  # the model changed since its workspace was built
NPU = "npu"  # the last NPU pipeline run failed
TARGET = "target"  # the last target edit was refused
SUBSTITUTION = "substitution"  # a substitution whose check failed is on, and the user has not decided
UNREADABLE = "unreadable"  # a file of the open workspace could not be read (it is left as it is)
GENERAL = "general"  # anything else: cleared by the next user action that opens or compiles


GATHERED = (UNREADABLE,)  # conditions whose messages add up instead of replacing each other


class Problems:
    def __init__(self, on_change: Callable[[], None] = lambda: None):
        self._messages: dict[str, str] = {}  # condition -> message, oldest first
        self._on_change = on_change

    def raise_(self, condition: str, message: str) -> None:
        old = self._messages.pop(condition, None)
        if condition in GATHERED and old is not None:  # one banner names every file that could not be read
            message = old if message in old.split("\n") else f"{old}\n{message}"
        self._messages[condition] = message
        self._on_change()

    def clear(self, *conditions: str) -> None:
        """End `conditions` (none given: every one)."""
        gone = [c for c in (conditions or tuple(self._messages)) if c in self._messages]
        for condition in gone:
            del self._messages[condition]
        if gone:
            self._on_change()

    def is_raised(self, condition: str) -> bool:
        return condition in self._messages

    def newest(self) -> str | None:
        """The message the banner shows: the newest raised."""
        return next(reversed(self._messages.values()), None)

    def conditions(self) -> list[str]:
        return list(self._messages)
