"""The NPU build variant of a workspace: NPU dispatches through the plugin, the rest compiled by IREE.

Every dispatch the NPU program places on the NPU has its executable
replaced (`replacement`); iree-compile builds the module from the stream
snapshot with one `--iree-hal-substitute-executable-source` per replaced
executable. Kept in the workspace under npu/hal/:

    module.vmfb         the NPU variant
    variant.json        what was replaced (import, dispatches, bindings), what was not and why,
                        and the key it was built for
    npu_program.npub    the program binary the plugin's C interpreter runs: the generic NPU's
                        instructions and what each replaced dispatch computes (`exec_binary`)
    executables/*.mlir  the replacement executables

The key is the NPU program (model.npu.json, which holds its target) and
the stream snapshot: `build_variant` reuses a variant built for the same
key and rebuilds it when either changed, or when npu_program.npub is no
longer the file it wrote (its hash is kept in variant.json). The build is staged and
published with one journal commit, under the workspace's lock; a failed
build leaves the workspace as it was.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field
from pathlib import Path

from iree.compiler import ir

from ...compile.compiler import CompileJob, ProgressCallback
from ...errors import StudioError
from ...executables.catalog import source_dumps
from ...textio import parse_json, read_bytes, read_text
from ...workspace.publish_journal import MANIFEST
from ...workspace.substitutions import FLAGS, SOURCE, active_flags, load as load_substitutions
from ...workspace.workspace import Workspace
from ...ir.context import first_diagnostic
from ...ir.flow_graph import FlowGraph
from ...ir.mlir_text import SnapshotParseError
from ..program.npu_ir import NpuProgram
from ..store.workspace_io import json_path
from ..isa import program_assembly
from ..isa.spec import ISA_VERSION
from .exec_binary import program_binary
from .exec_desc import FILE as EXEC_FILE
from .exec_lower import describe
from .replacement import BindingSpec, NotReplaceable, build_replacement

FOLDER = "npu/hal"
VARIANT_JSON = "variant.json"
FORMAT = "npu-studio.npu-variant"
# 2: npu_exec.json beside it; 3: the import passes each binding's size, its hash kept; 4: npu_program.npub instead
VERSION = 4
_OLD_EXEC_FILE = "npu_exec.json"  # what version 3 wrote: removed when a variant is built
_APPLIED = "substituted with MLIR source at"


@dataclass(frozen=True)
class ImportRecord:
    dispatch: int  # the import is npu_dispatch_<dispatch>
    dispatches: tuple[int, ...]  # every dispatch site calling this executable
    executable: str
    export: str
    bindings: tuple[BindingSpec, ...]

    def to_dict(self) -> dict:
        return {"dispatch": self.dispatch, "dispatches": list(self.dispatches), "executable": self.executable,
                "export": self.export, "bindings": [b.to_dict() for b in self.bindings]}

    @classmethod
    def from_dict(cls, d: dict) -> "ImportRecord":
        return cls(d["dispatch"], tuple(d["dispatches"]), d["executable"], d["export"],
                   tuple(BindingSpec.from_dict(b) for b in d["bindings"]))


@dataclass
class Variant:
    root: Path  # the workspace
    key: dict
    imports: list[ImportRecord]
    cpu: list[dict]  # {"dispatch", "executable", "reason"}: dispatches left to IREE's CPU code
    build_seconds: float
    exec_sha256: str = ""  # of the npu_program.npub written with it
    reused: bool = field(default=False, compare=False)

    @property
    def vmfb(self) -> Path:
        return self.root / FOLDER / "module.vmfb"

    @property
    def exec_path(self) -> Path:
        """The description the plugin's standalone mode runs (exec_desc)."""
        return self.root / FOLDER / EXEC_FILE

    def import_of(self, dispatch: int) -> ImportRecord | None:
        return next((r for r in self.imports if dispatch in r.dispatches), None)

    def to_dict(self) -> dict:
        return {"format": FORMAT, "version": VERSION, "key": self.key, "build_seconds": self.build_seconds,
                "npu_exec_sha256": self.exec_sha256, "imports": [r.to_dict() for r in self.imports],
                "cpu": self.cpu}

    @classmethod
    def load(cls, root: Path) -> "Variant | None":
        path = Path(root) / FOLDER / VARIANT_JSON
        try:
            d = parse_json(read_bytes(path), path)  # BadFile: a FIFO, not JSON, nested too deeply
            if d.get("format") != FORMAT or d.get("version") != VERSION:
                return None
            return cls(Path(root), d["key"], [ImportRecord.from_dict(r) for r in d["imports"]], d["cpu"],
                       d["build_seconds"], str(d.get("npu_exec_sha256", "")))
        except (StudioError, OSError, ValueError, KeyError, TypeError, AttributeError):
            return None


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def variant_key(ws: Workspace) -> dict:
    """What the variant is built from; StudioError when the workspace has no NPU program or stream snapshot."""
    program = json_path(ws)
    if not program.is_file():
        raise StudioError(ws.root, "no NPU program; run `npu-studio npu WORKSPACE` first")
    stream = ws.snapshot_path("stream")
    if "stream" not in ws.manifest.phases or not stream.is_file():
        raise StudioError(ws.root, "no stream snapshot; compile first")
    subs = sorted(f for f in ws.substitution_flags())
    return {"npu_program_sha256": _sha(program), "stream_sha256": _sha(stream),
            "substitutions": subs, "npu_exec": f"npub/{ISA_VERSION}"}


def current_variant(ws: Workspace) -> Variant | None:
    """The kept variant if it was built for the workspace's current NPU program and build, with the
    description it wrote."""
    v = Variant.load(ws.root)
    if v is None or not v.vmfb.is_file() or not v.exec_path.is_file() or _sha(v.exec_path) != v.exec_sha256:
        return None
    try:
        return v if v.key == variant_key(ws) else None
    except StudioError:
        return None


def plan_replacements(ws: Workspace, program: NpuProgram):
    """(replacements, cpu records, execution description): one replacement per executable whose
    dispatches are all on the NPU, each described for the standalone interpreter."""
    sources = source_dumps(ws)
    ctx = ir.Context()
    ctx.enable_multithreading(False)
    ctx.allow_unregistered_dialects = True
    flow = ws.snapshot_path("flow")
    with ctx:
        try:
            module = ir.Module.parse(read_text(flow))  # read_text: BadFile naming it (missing, not UTF-8)
        except ir.MLIRError as exc:  # a damaged or hand-edited snapshot: its first error, at line:col
            raise SnapshotParseError(flow, *first_diagnostic(exc)) from None
        graph = FlowGraph(module.operation)
        if len(graph.sites) != len(program.dispatches):
            raise StudioError(json_path(ws), f"the NPU program has {len(program.dispatches)} dispatches, the "
                                             f"flow snapshot {len(graph.sites)}: run the NPU pipeline again")
        by_exe: dict[str, list] = {}
        for site in graph.sites:
            by_exe.setdefault(site.executable, []).append(site)
        replacements, cpu, described = [], [], []
        for exe, sites in by_exe.items():
            indices = tuple(s.index for s in sites)
            illegal = [i for i in indices if not program.dispatches[i].legal]
            try:
                if illegal:
                    raise NotReplaceable(program.dispatches[illegal[0]].reason or "not legal on the NPU")
                if exe not in sources:
                    raise NotReplaceable("IREE dumped no source for it")
                rep = build_replacement(sources[exe], graph.func_of(sites[0]), indices[0])
                replacements.append((rep, indices))
                described.append(describe(graph.func_of(sites[0]), program, indices[0]))
            except NotReplaceable as exc:
                cpu += [{"dispatch": i, "executable": exe, "reason": str(exc)} for i in indices]
    cpu.sort(key=lambda r: r["dispatch"])
    return replacements, cpu, described


def build_variant(ws: Workspace, *, force: bool = False, on_progress: ProgressCallback | None = None,
                  started=None) -> Variant:
    """The NPU variant of `ws`, reused when current (see the module doc), else built and published."""
    if not force:
        kept = current_variant(ws)
        if kept is not None:
            kept.reused = True
            return kept
    key = variant_key(ws)
    program = NpuProgram.load(json_path(ws))
    t0 = time.perf_counter()
    replacements, cpu, described = plan_replacements(ws, program)
    with ws.transaction() as txn:
        staging = txn.staging
        build = staging / "build"
        exe_dir = staging / "executables"
        exe_dir.mkdir()
        replaced = {rep.executable for rep, _ in replacements}
        # The user's own substitutions stay, except of the executables the NPU takes over.
        flags = active_flags(ws, [s for s in load_substitutions(ws) if s.name not in replaced])
        for rep, _ in replacements:
            path = exe_dir / f"npu_dispatch_{rep.dispatch}.mlir"
            path.write_text(rep.text, encoding="utf-8")
            flags.append(f"{FLAGS[SOURCE]}={rep.executable}={path}")
        job = CompileJob(ws.snapshot_path("stream"), build,
                         ws.compile_options(from_phase="stream", extra_flags=tuple(flags)), on_progress=on_progress)
        if started is not None:
            started(job)
        result = job.run()
        missing = [rep.executable for rep, _ in replacements if not _applied(result.stderr, rep.executable)]
        if missing:
            raise StudioError(ws.root, f"iree-compile did not substitute @{missing[0]}")
        imports = [ImportRecord(rep.dispatch, idx, rep.executable, rep.export, rep.bindings)
                   for rep, idx in replacements]
        # the generic NPU's instructions: the bundled plugin's format, whatever backend planned the program
        instructions = list(program_assembly(program).instructions)
        (staging / EXEC_FILE).write_bytes(program_binary(instructions, described))
        variant = Variant(ws.root, key, imports, cpu, time.perf_counter() - t0, _sha(staging / EXEC_FILE))
        (staging / VARIANT_JSON).write_text(json.dumps(variant.to_dict(), indent=1), encoding="utf-8")
        _publish(ws, txn, build / "module.vmfb", exe_dir)
        return variant


def _applied(stderr: str, name: str) -> bool:
    return any(_APPLIED in ln and f"`{name}`" in ln for ln in stderr.splitlines())


def _publish(ws: Workspace, txn, vmfb: Path, exe_dir: Path) -> None:
    staging, publish = txn.staging, txn.publish
    # Moves named relative to the staging folder: right whether or not the workspace path is absolute.
    publish.move(vmfb.relative_to(staging), f"{FOLDER}/module.vmfb")
    publish.move(VARIANT_JSON, f"{FOLDER}/{VARIANT_JSON}")
    publish.move(EXEC_FILE, f"{FOLDER}/{EXEC_FILE}")
    if (ws.root / FOLDER / _OLD_EXEC_FILE).is_file():
        publish.delete(f"{FOLDER}/{_OLD_EXEC_FILE}")
    new = set()
    for path in sorted(exe_dir.glob("*.mlir")):
        dest = f"{FOLDER}/executables/{path.name}"
        publish.move(path.relative_to(staging), dest)
        new.add(dest)
    old = ws.root / FOLDER / "executables"
    for path in sorted(old.glob("*.mlir")) if old.is_dir() else []:
        rel = f"{FOLDER}/executables/{path.name}"
        if rel not in new:
            publish.delete(rel)
    txn.commit((ws.root / MANIFEST).read_text(encoding="utf-8"))  # the manifest as it is
