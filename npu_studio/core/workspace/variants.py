"""Named build variants of a workspace: the same model built with other flags or another compiler.

A variant adds compiler flags (free text, checked by the compiler itself
before it is recorded) and/or names another `iree-compile` binary (checked to
be one, its version recorded) to the workspace's own compile options (its
backend and switched-on substitutions). Each variant is built from the
workspace's imported module into its own folder:

    variants/<name>/phases/NN.<phase>.mlir   its snapshots
    variants/<name>/module.vmfb              its module
    variants/<name>/executables/<kind>/...   its executable dumps
    variants/<name>/stderr.log               its compiler diagnostics
    variants/<name>/params.irpa              its parameter archive, when it declares the workspace's
                                             parameters with other element types (a demotion)
    variants/<name>/crash-reproducer.mlir    kept when its last build crashed the compiler

and listed in the manifest under `variants` (manifest.py, schema beside it).
Creating, building and removing a variant are workspace transactions like any
build (transaction.py): a failed or cancelled build leaves the workspace
byte-identical, a rebuild replaces only that variant's own files, and the
workspace's own build is never touched. The name `main` stands for the
workspace's own build wherever a variant name is accepted (`resolve`).

The API:

    create(ws, name, flags="", compiler=None) -> Variant   check and record (no build)
    variants(ws) -> list[Variant]                            in name order
    get(ws, name) -> Variant                                 StudioError for an unknown name
    build_job(ws, name, on_progress=None) -> VariantJob      .run() -> Variant (blocks), .cancel() from any thread
    build(ws, name, on_progress=None) -> Variant             build_job(...).run()
    remove(ws, name)                                         its files, records and its entry go
    resolve(ws, name) -> Build                               `main` or a built variant: vmfb, snapshots
"""

from __future__ import annotations

import re
import shlex
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from .. import processes
from ..compile import flag_policy, toolchain
from ..compile.compiler import EXECUTABLES_DIR, CompileJob, ProgressCallback, snapshot_name
from ..compile.options import CompileOptions
from ..compile.phases import SNAPSHOT_PHASES
from ..errors import Cancelled, StudioError, WorkspaceError
from . import trust
from .confine import inside
from .job import CancellableBuild
from .manifest import MANIFEST, Manifest
from .publish_journal import Publish

FOLDER = "variants"
MAIN = "main"  # the workspace's own build
# Records made about a build (compile profile, executable times, traces: core/debug/), named <build>.<kind>.
PROFILES_DIR = "profiles"
RECORD_SUFFIXES = (".json", ".executables.json", ".tracy")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
# Flags the build sets itself: a variant giving them would break the snapshots or the outputs.
_RESERVED = ("-o", "--output-file", "--compile-from", "--compile-to", "--dump-compilation-phases-to",
             "--iree-hal-dump-executable-", "--mlir-pass-pipeline-crash-reproducer", "--iree-hal-target-device",
             "--iree-hal-local-target-device-backends", "--mlir-timing")
_CHECK_SECONDS = 60.0
REPRODUCER = "crash-reproducer.mlir"  # kept in variants/<name>/ by a build that crashed the compiler


@dataclass
class Build:
    """A finished build inside a workspace: the workspace's own (`main`) or a variant's."""

    name: str
    root: Path
    phases: dict[str, dict] = field(default_factory=dict)  # phase -> {"file", "seconds", "size_bytes"}
    vmfb: str | None = None
    command: list[str] = field(default_factory=list)
    total_seconds: float | None = None
    params: str | None = None  # the parameter archive its module reads (relative), if any

    @property
    def vmfb_path(self) -> Path | None:
        return self.root / self.vmfb if self.vmfb else None

    @property
    def params_path(self) -> Path | None:
        """The archive this build's `#stream.parameter.named` references read from."""
        return self.root / self.params if self.params else None

    def snapshot_path(self, phase: str) -> Path | None:
        rec = self.phases.get(phase)
        return self.root / rec["file"] if rec else None

    def snapshots(self) -> dict[str, Path]:
        """Snapshots by phase, in pipeline order."""
        return {p: self.root / self.phases[p]["file"] for p in SNAPSHOT_PHASES if p in self.phases}

    def phase_seconds(self) -> dict[str, float | None]:
        return {p: self.phases[p].get("seconds") for p in SNAPSHOT_PHASES if p in self.phases}

    @property
    def folder(self) -> Path:
        return self.root if self.name == MAIN else self.root / FOLDER / self.name

    @property
    def executables_dir(self) -> Path:
        return self.folder / EXECUTABLES_DIR


@dataclass
class Variant:
    name: str
    flags: list[str]
    compiler: str | None
    compiler_version: str
    build: Build | None  # None until built

    @property
    def vmfb_path(self) -> Path | None:
        return self.build.vmfb_path if self.build else None

    def snapshot_path(self, phase: str) -> Path | None:
        return self.build.snapshot_path(phase) if self.build else None


# -- reading ------------------------------------------------------------------


def variants(ws) -> list[Variant]:
    return [_variant(ws, name) for name in sorted(ws.manifest.variants)]


def get(ws, name: str) -> Variant:
    if name not in ws.manifest.variants:
        known = ", ".join(sorted(ws.manifest.variants)) or "none"
        raise WorkspaceError(ws.root / MANIFEST, f"no build variant {name!r} (variants: {known})")
    return _variant(ws, name)


def resolve(ws, name: str) -> Build:
    """The build called `name`: `main` (the workspace's own) or a built variant."""
    if name == MAIN:
        m = ws.manifest
        if not m.phases:
            raise WorkspaceError(ws.root, "the workspace has no build; compile it first")
        phases = {p: {"file": r.file, "seconds": r.seconds, "size_bytes": r.size_bytes} for p, r in m.phases.items()}
        return Build(MAIN, ws.root, phases, m.vmfb, list(m.command), m.total_seconds, _archive(ws))
    variant = get(ws, name)
    if variant.build is None:
        raise WorkspaceError(ws.root, f"build variant {name!r} is not built yet; build it first")
    return variant.build


def options_for(ws, name: str) -> CompileOptions:
    """The compile options a variant's build uses: the workspace's own plus the variant's flags and compiler.

    A variant's record is run only in a trusted workspace (trust.py), its flags pass the flag
    policy again and its compiler is checked again to be iree-compile, at every use."""
    rec = get(ws, name) if name != MAIN else None
    base = ws.compile_options()
    if rec is None:
        return base
    where = ws.root / MANIFEST
    trust.require(ws.root, f"building variant {name!r} runs {describe(rec)}")
    flag_policy.check(rec.flags, root=ws.root, where=where)
    compiler = None
    if rec.compiler is not None:
        compiler = str(toolchain.check_compiler(rec.compiler)[0])
    return base.with_(extra_flags=(*base.extra_flags, *rec.flags), compiler=compiler)


def describe(rec: "Variant") -> str:
    """What a variant's build runs, as the user should see it before it does."""
    compiler = rec.compiler or "the installed iree-compile"
    flags = shlex.join(rec.flags)
    if len(flags) > 300:
        flags = flags[:297] + "..."
    return f"{compiler} with flags {flags}" if rec.flags else compiler


def _archive(ws) -> str | None:
    return ws.manifest.params["archive"] if ws.manifest.params else None


def _variant(ws, name: str) -> Variant:
    rec = ws.manifest.variants[name]
    b = rec.get("build")
    build = None
    if b:
        build = Build(name, ws.root, dict(b.get("phases", {})), b.get("vmfb"), list(b.get("command", [])),
                      b.get("total_seconds"), b.get("params") or _archive(ws))
    return Variant(name, list(rec.get("flags", [])), rec.get("compiler"), rec.get("compiler_version", ""), build)


# -- checking what the user typed ---------------------------------------------


def parse_flags(text: str | list[str] | tuple[str, ...], where: Path, root: Path | None = None) -> list[str]:
    """Free text (shell quoting) or a list of flags; each must be a flag the build does not set itself and
    pass the flag policy (flag_policy.py; paths inside the workspace `root`, default: `where`'s)."""
    if isinstance(text, str):
        try:
            flags = shlex.split(text)
        except ValueError as exc:
            raise StudioError(where, f"cannot read the flags: {exc}") from None
    else:
        flags = [str(f) for f in text]
    for flag in flags:
        if not flag.startswith("-"):
            raise StudioError(where, f"{flag!r} is not a compiler flag (flags start with '-')")
        if flag.split("=", 1)[0] == "-o" or any(flag.startswith(r) for r in _RESERVED if r != "-o"):
            raise StudioError(where, f"{flag.split('=', 1)[0]} is set by the build itself; a variant cannot change it")
    if root is None:
        root = where.parent if where.name == MANIFEST else where
    return flag_policy.check(flags, root=root, where=where)


def check_flags(options: CompileOptions, where: Path) -> None:
    """Let the compiler itself reject an unknown flag or a bad value, on an empty module (a second or so)."""
    from ..compile.compiler import build_command

    with tempfile.TemporaryDirectory(prefix="npu-studio-flags-") as tmp:
        empty = Path(tmp) / "empty.mlir"
        empty.write_text("module {}\n", encoding="utf-8")
        cmd = build_command(empty, Path(tmp) / "dumps", Path(tmp) / "out.mlir", options.with_(to_phase="input"))
        try:
            done = processes.run_child(cmd, timeout=_CHECK_SECONDS)
        except subprocess.TimeoutExpired:
            raise StudioError(where, "the compiler did not finish checking the flags") from None
    if done.returncode != 0:
        lines = [ln.strip() for ln in done.stderr.splitlines() if ln.strip()]
        reason = lines[0] if lines else f"the compiler rejected the flags (exit {done.returncode})"
        reason = re.sub(r"^\S*iree-compile: ", "", reason).split("  Try: ")[0]
        raise StudioError(where, reason)


# -- changing -----------------------------------------------------------------


def create(ws, name: str, flags: str | list[str] | tuple[str, ...] = "", compiler: str | Path | None = None) -> Variant:
    """Record a variant after the compiler accepted its flags; nothing is built yet."""
    where = ws.root / MANIFEST
    if not _NAME.match(name or "") or name == MAIN:
        raise StudioError(where, f"bad variant name {name!r}: letters, digits, '_', '.', '-' "
                                 f"(at most 64, not '{MAIN}')")
    if name in ws.manifest.variants:
        raise StudioError(where, f"build variant {name!r} exists already; remove it first")
    parsed = parse_flags(flags, where)
    compiler_path, version = (None, "")
    if compiler is not None and str(compiler).strip():
        compiler_path, version = toolchain.check_compiler(compiler)
    base = ws.compile_options()
    check_flags(base.with_(extra_flags=(*base.extra_flags, *parsed),
                           compiler=str(compiler_path) if compiler_path else None), where)
    if compiler_path is None:
        version = toolchain.compiler_version()
    record = {"flags": parsed, "compiler": str(compiler_path) if compiler_path else None,
              "compiler_version": version, "created": time.time(), "build": None}

    def change(manifest: Manifest, publish: Publish) -> None:
        if name in manifest.variants:
            raise StudioError(where, f"build variant {name!r} exists already; remove it first")
        manifest.variants[name] = record

    _transaction(ws, change)
    return get(ws, name)


def remove(ws, name: str) -> None:
    """Forget a variant and delete the files its build wrote (files the user put there stay)."""
    get(ws, name)

    def change(manifest: Manifest, publish: Publish) -> None:
        rec = manifest.variants.pop(name, None) or {}
        for rel in _build_files(rec.get("build")):
            publish.delete(rel)
        _drop_reproducer(ws, name, publish)
        for suffix in RECORD_SUFFIXES:
            if (ws.root / PROFILES_DIR / f"{name}{suffix}").is_file():
                publish.delete(f"{PROFILES_DIR}/{name}{suffix}")

    _transaction(ws, change)
    _prune_empty(ws.root / FOLDER / name)


def build(ws, name: str, on_progress: ProgressCallback | None = None) -> Variant:
    return build_job(ws, name, on_progress=on_progress).run()


def build_job(ws, name: str, on_progress: ProgressCallback | None = None, prepare=None) -> "VariantJob":
    """`prepare(source, options, work_dir) -> options`, if given, may change the options just before the
    compile (core/debug fits substitutions to a broken build's buffers); `work_dir` lives until it ends."""
    get(ws, name)
    return VariantJob(ws, name, on_progress=on_progress, prepare=prepare)


class VariantJob(CancellableBuild):
    """Builds one variant from the imported module and publishes it; `cancel()` may be called from any thread."""

    def __init__(self, ws, name: str, *, on_progress: ProgressCallback | None = None, prepare=None):
        self.ws, self.name, self.on_progress, self.prepare = ws, name, on_progress, prepare
        self.options = options_for(ws, name).with_(from_phase="start")
        self._start_idle()

    def run(self) -> Variant:
        ws, name = self.ws, self.name
        if ws.pending_import is not None:
            raise WorkspaceError(ws.root, "an import is waiting for its compile; compile first")
        inside(ws.root, f"{FOLDER}/{name}")  # before the compile: variants/ a symbolic link is refused
        with ws.transaction() as txn:
            staging = txn.staging
            try:
                options = self.options
                if self.prepare is not None:
                    options = self.prepare(ws.imported_path, options, staging / "prepare")
                # A crash reproducer outlives the failed build, in the variant's own folder.
                self._job = CompileJob(ws.imported_path, staging / "build", options,
                                       on_progress=self.on_progress, display_path=ws.user_model_path,
                                       keep_dir=ws.root / FOLDER / name)
                if self._cancel.is_set():
                    raise Cancelled()
                result = self._job.run()
                archive = self._convert_archive(result, staging)
                self._publish(txn, result, archive)
            except BaseException:
                ws.manifest = Manifest.load(ws.root)
                raise
        return get(ws, name)

    def _convert_archive(self, result, staging: Path) -> Path | None:
        """The variant's own archive when its flow declares parameters in other types (param_convert)."""
        from ..compile.param_convert import convert_archive, declared_in

        ws = self.ws
        flow = next((t.path for t in result.phases if t.phase == "flow"), None)
        if ws.params_path is None or flow is None:
            return None
        imported = ws.imported_path if ws.imported_path.suffix == ".mlir" else ws.snapshot_path("input")
        dest = staging / "params.irpa"
        converted = convert_archive(ws.params_path, declared_in(imported), declared_in(flow), dest,
                                    staging / "convert", flow, should_stop=self._cancel.is_set)
        return dest if converted else None

    def _publish(self, txn, result, archive: Path | None = None) -> None:
        ws, name = self.ws, self.name
        base = f"{FOLDER}/{name}"
        staging, publish = txn.staging, txn.publish
        manifest = Manifest.load(ws.root)
        if name not in manifest.variants:
            raise WorkspaceError(ws.root / MANIFEST, f"build variant {name!r} was removed during its build")
        phases = {}
        for t in result.phases:
            dest = f"{base}/phases/{snapshot_name(t.phase)}"
            publish.move(t.path, dest)
            phases[t.phase] = {"file": dest, "seconds": t.seconds, "size_bytes": t.size_bytes}
        files = []
        build_dir = staging / "build"
        for path in sorted((build_dir / EXECUTABLES_DIR).rglob("*")):
            if path.is_file():
                files.append(publish.move(path, f"{base}/{path.relative_to(build_dir)}").relative_to(ws.root))
        files.append(publish.move(build_dir / "stderr.log", f"{base}/stderr.log").relative_to(ws.root))
        vmfb = None
        if result.vmfb is not None:
            vmfb = f"{base}/module.vmfb"
            publish.move(result.vmfb, vmfb)
        params = None
        if archive is not None:
            params = f"{base}/params.irpa"
            files.append(publish.move(archive, params).relative_to(ws.root))
        new_files = {str(f) for f in files} | {p["file"] for p in phases.values()} | ({vmfb} if vmfb else set())
        for old in _build_files(manifest.variants[name].get("build")):
            if old not in new_files:
                publish.delete(old)
        _drop_reproducer(ws, name, publish)  # it told of an earlier build's crash
        manifest.variants[name]["build"] = {
            "phases": phases, "vmfb": vmfb, "files": [str(f) for f in files], "command": result.command,
            "total_seconds": result.total_seconds, "built": time.time(), "params": params}
        txn.commit(manifest.to_json())
        ws.manifest = manifest


def _drop_reproducer(ws, name: str, publish: Publish) -> None:
    if (ws.root / FOLDER / name / REPRODUCER).is_file():
        publish.delete(f"{FOLDER}/{name}/{REPRODUCER}")


def _build_files(build: dict | None) -> list[str]:
    if not build:
        return []
    return [*(p["file"] for p in build.get("phases", {}).values()), *build.get("files", []),
            *([build["vmfb"]] if build.get("vmfb") else [])]


def _transaction(ws, change) -> None:
    """Apply `change(manifest, publish)` to the manifest on disk as one journal commit."""
    if ws.pending_import is not None:
        raise WorkspaceError(ws.root, "an import is waiting for its compile; compile first")
    with ws.transaction() as txn:
        manifest = Manifest.load(ws.root)
        change(manifest, txn.publish)
        txn.commit(manifest.to_json())
        ws.manifest = manifest


def _prune_empty(folder: Path) -> None:
    """Remove the folders a removed variant's files left empty (never a file)."""
    if not folder.is_dir():
        return
    for sub in sorted((p for p in folder.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True):
        try:
            sub.rmdir()
        except OSError:
            pass
    try:
        folder.rmdir()
        folder.parent.rmdir()
    except OSError:
        pass
