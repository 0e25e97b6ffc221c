"""NPU targets as documents of their own: bundled, user, and the one a workspace was built with.

- Bundled targets (resources/targets/*.toml) are never written to.
- User targets live in the user's config folder, `<config>/targets/<name>.toml`, where
  <config> is $NPU_STUDIO_CONFIG, else $XDG_CONFIG_HOME/npu-studio, else ~/.config/npu-studio (core/paths.py).
  Editing a bundled target saves a new, named user target; editing a user target saves it in place.
  The picker lists both (`list_targets`). A user target made from a bundled one keeps that one's
  name beside it (`<name>.toml.from`): the build summary names the keys the user changed.
- A workspace records the target text its NPU result was built with (npu/target.toml, and
  npu/target.json naming the file it came from), so reopening it shows, and re-runs with,
  that target even after the original file changed or went away.
"""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from ...textio import write_text_atomic
from .target import RESOURCES, NpuTarget, TargetError, parse_target, user_targets_dir

RECORD_TOML = "target.toml"
RECORD_JSON = "target.json"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


@dataclass(frozen=True)
class TargetDoc:
    """One target file the picker offers."""

    name: str  # the file's stem: what the picker shows
    path: Path
    bundled: bool

    @property
    def label(self) -> str:
        return f"{self.name} (bundled)" if self.bundled else f"{self.name} (user)"


@dataclass(frozen=True)
class RecordedTarget:
    """The target a workspace's NPU result was built with."""

    path: Path  # the workspace's copy of the text
    origin: Path  # the file that text came from
    name: str  # the target's own `name`
    backend: str = "generic"  # the NPU backend it was built for (docs/npu-backends.md)


def is_bundled(path: str | Path) -> bool:
    """True for a target shipped in resources/targets (read-only for us)."""
    try:
        return Path(path).resolve().parent == RESOURCES.resolve()
    except OSError:
        return False


def bundled_targets() -> list[TargetDoc]:
    return [TargetDoc(p.stem, p, True) for p in sorted(RESOURCES.glob("*.toml"), key=lambda p: p.stem)]


def user_targets() -> list[TargetDoc]:
    folder = user_targets_dir()
    if not folder.is_dir():
        return []
    return [TargetDoc(p.stem, p, False) for p in sorted(folder.glob("*.toml"), key=lambda p: p.stem)]


def list_targets() -> list[TargetDoc]:
    """Every target the picker offers: bundled first, then the user's, each by name."""
    return bundled_targets() + user_targets()


def user_target_path(name: str) -> Path:
    """Where the user target `name` lives; TargetError for a name that is not a plain file name."""
    if not _NAME.match(name):
        raise TargetError(user_targets_dir(), "<name>", None,
                          f"{name!r} is not a target name (letters, digits, '.', '_', '-')")
    return user_targets_dir() / f"{name}.toml"


def free_name(base: str) -> str:
    """`<base>-edited`, or `<base>-edited-2`, ... : the first name no user target has."""
    stem = f"{base}-edited"
    name, n = stem, 1
    while user_target_path(name).exists():
        n += 1
        name = f"{stem}-{n}"
    return name


def save_edit(text: str, source: str | Path, name: str | None = None, check=parse_target) -> Path:
    """Check `text` as a target with `check(text, path)` (default: the generic NPU's keys; a
    TargetError names `source`, the file being edited, with line and key) and save it. A user
    target is saved in place; a bundled one becomes the new user target `name` (default: the first
    free `<stem>-edited[-N]`). Returns the file written."""
    source = Path(source)
    check(text, source)
    if is_bundled(source) or name is not None:
        dest = user_target_path(name or free_name(source.stem))
    else:
        dest = source
    if is_bundled(dest):
        raise OSError(f"{dest}: bundled targets are not overwritten")
    origin = bundled_origin(source)
    dest.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(dest, text)
    if origin is not None and dest != source:
        write_text_atomic(_origin_note(dest), origin.name)  # which bundled target it was made from
    return dest


def _origin_note(user_target: Path) -> Path:
    """Beside a user target: the name of the bundled target it was made from (the picker lists *.toml only)."""
    return user_target.with_name(user_target.name + ".from")


def bundled_origin(path: str | Path) -> Path | None:
    """The bundled target `path` is, or was made from: itself, the one its note names, else the
    bundled target of the same `name` (a user target written before notes were kept)."""
    path = Path(path)
    if is_bundled(path):
        return path
    try:
        named = RESOURCES / _origin_note(path).read_text(encoding="utf-8").strip()
        if named.is_file():
            return named
    except OSError:
        pass
    name = _name_of(path)
    if name is None:
        return None
    return next((doc.path for doc in bundled_targets() if _name_of(doc.path) == name), None)


def _name_of(path: Path) -> object:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8")).get("name")
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None


def changed_keys(path: str | Path, base: str | Path) -> list[tuple[str, object, object]]:
    """(dotted key, value in `base`, value in `path`) for every key whose value differs; a key one
    of them lacks has None there. Unreadable files: no changes can be named (empty list)."""
    try:
        new, old = (_flat(tomllib.loads(Path(p).read_text(encoding="utf-8"))) for p in (path, base))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return []
    return [(k, old.get(k), new.get(k)) for k in sorted(old.keys() | new.keys()) if old.get(k) != new.get(k)]


def _flat(table: dict, prefix: str = "") -> dict[str, object]:
    out: dict[str, object] = {}
    for key, value in table.items():
        if isinstance(value, dict):
            out.update(_flat(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


# -- the target a workspace was built with ---------------------------------------------------


def record(folder: Path, text: str, origin: str | Path, target: NpuTarget | None = None) -> RecordedTarget:
    """Keep `text` (already checked, parsed as `target`: None parses it for the generic NPU) as the
    target of the results in `folder` (a workspace's npu/), with the backend it was built for."""
    folder = Path(folder)
    origin = Path(origin)
    copy = folder / RECORD_TOML
    previous = recorded(folder)
    if previous is not None and _same_file(origin, copy):
        origin = previous.origin  # a re-run with the recorded copy keeps where it came from
    target = target or parse_target(text, origin)
    name, backend = target.name, target.backend
    meta = {"origin": str(origin), "name": name, "sha256": hashlib.sha256(text.encode()).hexdigest()}
    if backend != "generic":
        meta["backend"] = backend
    meta_text = json.dumps(meta, indent=2)
    # Rewrite only on a change, so a re-run leaves the user's record (and its mtime) alone.
    folder.mkdir(parents=True, exist_ok=True)
    if _read(copy) != text:
        write_text_atomic(copy, text)
    if _read(folder / RECORD_JSON) != meta_text:
        write_text_atomic(folder / RECORD_JSON, meta_text)
    return RecordedTarget(copy, origin, name, backend)


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def recorded(folder: Path) -> RecordedTarget | None:
    """The recorded target of `folder`, or None when nothing (readable) was recorded."""
    folder = Path(folder)
    copy, meta_path = folder / RECORD_TOML, folder / RECORD_JSON
    if not copy.is_file() or not meta_path.is_file():
        return None
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        return RecordedTarget(copy, Path(meta["origin"]), str(meta["name"]), str(meta.get("backend", "generic")))
    except (OSError, ValueError, KeyError, TypeError, RecursionError):
        return None


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return False
