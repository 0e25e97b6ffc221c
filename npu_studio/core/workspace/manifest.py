"""A workspace's manifest.json: what is there and how it was made.

Manifests are validated against the JSON schema shipped with the package
(schemas/workspace-manifest.schema.json) before anything in them is used,
and every path they name must stay inside the workspace, so a hand-edited
or hostile manifest can neither crash the app nor point it at other files.
"""

from __future__ import annotations

import functools
import json
import os
import stat
from dataclasses import asdict, dataclass, field, fields
from importlib import resources
from pathlib import Path

from ..compile.options import DEFAULT_TARGET, TARGETS
from ..errors import BadFile, WorkspaceError
from ..textio import parse_json, read_bytes, write_text_atomic

MANIFEST = "manifest.json"
MANIFEST_VERSION = 1

# Phase states, as the timeline shows them.
DONE, EDITED, STALE, PENDING = "done", "edited", "stale", "pending"


@dataclass
class PhaseRecord:
    file: str
    seconds: float | None = None
    size_bytes: int = 0
    state: str = DONE
    # What the compiler wrote (compiler_output.py): the SHA-256 of the snapshot as written, and the phase the
    # compile that wrote it started from. "" in workspaces made before they were recorded.
    sha256: str = ""
    compiled_from: str = ""


@dataclass
class Manifest:
    source: str
    imported: str
    origin: str = ""  # absolute path of the file the user opened
    source_sha256: str = ""  # the model's content when imported (model_digest): reopening skips the compile
    target: str = DEFAULT_TARGET
    npu_backend: str = "generic"  # the NPU backend its NPU results are built for (docs/npu-backends.md)
    compiler_version: str = ""
    phases: dict[str, PhaseRecord] = field(default_factory=dict)
    vmfb: str | None = None
    command: list[str] = field(default_factory=list)
    total_seconds: float | None = None
    import_seconds: float | None = None
    from_phase: str = "start"
    edits: list[dict] = field(default_factory=list)
    params: dict | None = None  # {"archive": "params.irpa", "threshold": bytes} when weights are outside the IR
    options: dict | None = None  # the CompileOptions of the last compile (CompileOptions.to_json)
    substitutions: list[dict] = field(default_factory=list)  # executable substitutions (core/executables/substitution.py)
    plain_build: dict | None = None  # the build without substitutions the numeric gate compares against
    variants: dict = field(default_factory=dict)  # named build variants by name (variants.py)
    version: int = MANIFEST_VERSION
    # Keys this version does not know (written by a later one): kept as they are.
    extra: dict = field(default_factory=dict, compare=False)

    def to_json(self) -> str:
        data = asdict(self)
        extra = data.pop("extra")
        return json.dumps({**extra, **data}, indent=2)

    @classmethod
    def from_json(cls, text: str | bytes, path: Path = Path(MANIFEST)) -> "Manifest":
        """Parse and validate; WorkspaceError naming `path` for anything malformed."""
        try:
            data = parse_json(text, path, "a manifest (JSON)")
        except BadFile as exc:
            raise WorkspaceError(path, exc.reason, line=exc.line, col=exc.col) from None
        try:
            validate(data, path)
        except RecursionError:
            raise WorkspaceError(path, "manifest is nested too deeply") from None
        if data.get("target", DEFAULT_TARGET) not in TARGETS:
            raise WorkspaceError(path, f"manifest names the unknown backend {data['target']!r}; "
                                       f"expected one of {', '.join(TARGETS)}")
        known = {f.name for f in fields(cls)} - {"extra"}
        kwargs = {k: v for k, v in data.items() if k in known}
        kwargs["phases"] = {k: PhaseRecord(**v) for k, v in data.get("phases", {}).items()}
        return cls(**kwargs, extra={k: v for k, v in data.items() if k not in known})

    @classmethod
    def load(cls, root: Path) -> "Manifest":
        path = Path(root) / MANIFEST
        manifest = cls.from_json(read_bytes(path), path)
        check_paths_inside(manifest, Path(root), path)
        return manifest

    def save(self, root: Path) -> None:
        write_text_atomic(Path(root) / MANIFEST, self.to_json())

    def files(self) -> list[str]:
        """Every workspace-relative path the manifest names."""
        names = [self.source, self.imported, *(r.file for r in self.phases.values())]
        names += [e["file"] for e in self.edits]
        if self.vmfb:
            names.append(self.vmfb)
        if self.params:
            names.append(self.params["archive"])
        names += [r[k] for r in self.substitutions for k in ("file", "draft") if r.get(k)]
        if self.plain_build:
            names.append(self.plain_build["vmfb"])
        for rec in self.variants.values():
            build = rec.get("build") or {}
            names += [p["file"] for p in build.get("phases", {}).values()]
            names += [*build.get("files", []), *([build["vmfb"]] if build.get("vmfb") else [])]
        return names


@functools.cache
def schema() -> dict:
    text = resources.files("npu_studio.core.workspace").joinpath("schemas/workspace-manifest.schema.json").read_text("utf-8")
    return json.loads(text)


@functools.cache
def _validator():
    import jsonschema

    return jsonschema.Draft202012Validator(schema())


def validate(data, path: Path) -> None:
    import jsonschema

    validator = _validator()
    error = jsonschema.exceptions.best_match(validator.iter_errors(data))
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "top level"
        raise WorkspaceError(path, f"manifest does not match its schema at {where}: {_short(error.message)}")


NAME_MAX = 255  # bytes in one file name on Linux file systems


def check_paths_inside(manifest: Manifest, root: Path, path: Path) -> None:
    """Every file the manifest names must resolve inside the workspace (symbolic links included)."""
    base = root.resolve()
    for name in manifest.files():
        try:
            os.fsencode(name)  # bytes that are not UTF-8 come back as \udc80-\udcff; any other surrogate cannot
            inside = "\0" not in name and (root / name).resolve().is_relative_to(base)
        except (UnicodeError, ValueError, OSError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else "not a file name"
            raise WorkspaceError(path, f"manifest names {name[:80]!r}: {reason}") from None
        if "\0" in name:
            raise WorkspaceError(path, f"manifest names {name[:80]!r}: not a file name")
        if any(len(os.fsencode(part)) > NAME_MAX for part in Path(name).parts):
            raise WorkspaceError(path, f"manifest names {name[:80]!r}...: a file name longer than {NAME_MAX} bytes")
        if not inside:
            raise WorkspaceError(path, f"manifest names {name[:80]!r}, which is outside the workspace")
        _refuse_special(root / name)


def _refuse_special(file: Path) -> None:
    """A FIFO, device or socket where the manifest names a file: every reader of it would wait
    forever (a FIFO) or read without end (/dev/zero), so the workspace is refused when it opens."""
    try:
        mode = os.stat(file).st_mode
    except (OSError, ValueError):
        return  # missing or unreadable: the reader of that file says so
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        raise WorkspaceError(file, "is not a regular file (a FIFO, a device or a socket), where the "
                                   "workspace keeps a file; refusing to read it")


def _short(message: str, limit: int = 160) -> str:
    return message if len(message) <= limit else message[: limit - 3] + "..."
