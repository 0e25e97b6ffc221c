"""Installed NPU backends, found through the `npu_studio.backends` entry point group.

Each entry point names a callable returning an `api.Backend`; the bundled
generic NPU registers itself in our own pyproject.toml the same way. A
backend is loaded on first use and kept; what it returns is checked, and
its hooks are wrapped (`guard.guarded`) so that a backend that raises, or returns
something that makes no sense, is one line naming it, the hook and its entry point
(`BackendError`), never a traceback.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from ..target.target import NpuTarget, parse_target, read_target_text
from .api import GENERIC, Backend, BackendError
from .guard import guarded, said
from .rules import RuleSet

GROUP = "npu_studio.backends"
_loaded: dict[str, Backend] = {}
_lock = threading.RLock()  # a backend may load another (the toy test backend extends the generic rules)


@dataclass(frozen=True)
class Installed:
    """One entry point of the group, before or after loading."""

    name: str
    package: str  # the distribution that registers it
    version: str  # the backend's own version ("" when it cannot be loaded)
    problem: str = ""  # why it cannot be loaded ("" when it loads)


def _entry_points() -> dict[str, metadata.EntryPoint]:
    found: dict[str, metadata.EntryPoint] = {}
    for ep in metadata.entry_points(group=GROUP):
        found.setdefault(ep.name, ep)  # the first wins, as importlib lists them
    return found


def names() -> list[str]:
    """Installed backend names, the generic one first."""
    return sorted(_entry_points(), key=lambda n: (n != GENERIC, n))


def installed() -> list[Installed]:
    """Every installed backend, loaded to read its version (a broken one says why)."""
    out = []
    for name, ep in sorted(_entry_points().items(), key=lambda kv: (kv[0] != GENERIC, kv[0])):
        package = ep.dist.name if ep.dist is not None else ""
        try:
            out.append(Installed(name, package, load(name).version))
        except BackendError as e:
            out.append(Installed(name, package, "", e.backend_reason))
    return out


def load(name: str | None = None) -> Backend:
    """The backend called `name` (None: the generic NPU), loaded once; BackendError when
    it is not installed, its entry point fails, or it returns something that is not a Backend."""
    name = name or GENERIC
    with _lock:
        if name in _loaded:
            return _loaded[name]
        ep = _entry_points().get(name)
        if ep is None:
            known = ", ".join(names()) or "none"
            raise BackendError(name, f"not installed (installed: {known})")
        try:
            made = ep.load()()
        except Exception as e:  # a third party's code: any failure is its failure
            raise BackendError(name, f"entry point {ep.value} failed: {said(e)}") from None
        if not isinstance(made, Backend):
            raise BackendError(name, f"entry point {ep.value} returned {type(made).__name__}, not a Backend")
        for hook, want in (("rules", RuleSet), ("default_target", Path), ("version", str)):
            if not isinstance(getattr(made, hook), want):
                raise BackendError(name, f"{hook} is a {type(getattr(made, hook)).__name__}, not a {want.__name__}")
        if made.name != name:
            raise BackendError(name, f"entry point {ep.value} returned the backend {made.name!r}")
        _loaded[name] = backend = guarded(made, ep.value)
        return backend


def backend_of(target: NpuTarget) -> Backend:
    """The backend a target belongs to."""
    return load(target.backend)


def load_target(backend: Backend, path: str | Path | None = None) -> NpuTarget:
    """`path` (None: the backend's default target) parsed with the backend's keys; TargetError."""
    p = Path(path) if path is not None else backend.default_target
    return parse_target(read_target_text(p), p, backend.name, backend.target_keys)


def parse_target_for(backend: Backend, text: str, path: str | Path) -> NpuTarget:
    return parse_target(text, path, backend.name, backend.target_keys)


def forget() -> None:
    """Drop the loaded backends (tests that change what is installed)."""
    with _lock:
        _loaded.clear()
