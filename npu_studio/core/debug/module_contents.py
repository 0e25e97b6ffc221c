"""What a compiled module holds: `iree-dump-module`'s metadata and the `.vmfb` archive's members.

A `.vmfb` is a FlatBuffer (the VM module: bytecode, small read-only data)
with a zip archive around it whose members are the embedded executables
(`<executable>_<binary>.so` for the CPU) and large constants (`_const.bin`).
`iree-dump-module --output=metadata` names the required types, module
dependencies, imported and exported functions (with their VM signatures)
and the sections' sizes. Which dispatches each executable serves comes from
the hal snapshot's dispatch index: IREE links a module's executables into
one (`module_linked`) when there are several, so one executable may serve
every dispatch, each through its own export.
"""

from __future__ import annotations

import re
import zipfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..compile.toolchain import ToolchainError, runtime_tool
from ..errors import StudioError
from ..ir.dispatch_index import index_file
from ..processes import run_child
from ..units import format_bytes
from ..workspace.workspace import Workspace

_ENTRY = re.compile(r"^\s*\[\s*(\d+)\]\s+(.*)$")
_FUNCTION = re.compile(r"^(?P<name>[^\s(]+)\((?P<args>.*)\)\s*->\s*\((?P<results>.*)\)$")
_RODATA = re.compile(r"^\s*\.rodata\[\s*(\d+)\]\s+(external|embedded)\s+(\d+) bytes(.*)$")
_VM_RODATA = re.compile(r"^\s*vm\.rodata\s+(?:private\s+|public\s+)?@([\w$.-]+)")
CONSTANT_POOL = "_const"  # IREE's name for the module's constant pools: `_const`, `_const_0`, ...


@dataclass
class Function:
    name: str
    signature: str  # as iree-dump-module prints it: `name(args) -> (results)`


@dataclass
class Executable:
    name: str  # the hal.executable symbol
    exports: dict[str, list[int]]  # export (function in the binary) -> the dispatches calling it
    dispatches: list[int]  # flow-phase dispatch indexes it serves
    binary: str | None  # the archive member holding its binary
    binary_bytes: int | None


@dataclass
class ModuleContents:
    vmfb: str
    vmfb_bytes: int
    required_types: list[str]
    dependencies: list[str]
    imports: list[Function]
    exports: list[Function]
    flatbuffer_bytes: int | None
    bytecode_bytes: int | None
    rodata: list[dict]  # {"index", "storage", "bytes", "preview"}
    members: list[dict]  # {"name", "bytes"} of the archive around the FlatBuffer
    executables: list[Executable]
    constants_bytes: int  # IREE's constant pools (`_const*` rodata), in the FlatBuffer or the archive
    parameters: str | None  # the parameter archive the module reads its named weights from
    parameters_bytes: int = 0
    notes: list[str] = field(default_factory=list)
    constants_embedded_bytes: int = 0  # of which inside the FlatBuffer (small constants)

    def largest(self, count: int = 8) -> list[tuple[str, int]]:
        """What makes the module (and its parameters) big, largest first."""
        parts = [(f"archive member {m['name']}", m["bytes"]) for m in self.members]
        if self.parameters:
            parts.append((f"parameters {Path(self.parameters).name}", self.parameters_bytes))
        if self.bytecode_bytes:
            parts.append(("VM bytecode (in module.fb)", self.bytecode_bytes))
        return sorted(parts, key=lambda p: -p[1])[:count]

    def to_dict(self) -> dict:
        d = asdict(self)
        d["format"], d["version"] = "npu-studio.module", 1
        d["largest"] = [{"what": w, "bytes": b} for w, b in self.largest()]
        return d

    def summary_lines(self) -> list[str]:
        lines = [f"{self.vmfb}: {format_bytes(self.vmfb_bytes)}"]
        lines.append("exported functions:")
        lines += [f"  {f.signature}" for f in self.exports]
        lines.append(f"imported functions: {len(self.imports)} "
                     f"(from {', '.join(self.dependencies) or 'no module'})")
        lines += [f"  {f.signature}" for f in self.imports]
        lines.append(f"required types: {', '.join(self.required_types)}")
        lines.append(f"executables: {len(self.executables)}")
        for e in self.executables:
            size = format_bytes(e.binary_bytes) if e.binary_bytes is not None else "size unknown"
            lines.append(f"  {e.name}: {size} in {e.binary or '(not an archive member)'}; "
                         f"{len(e.exports)} export(s) serving dispatches {index_ranges(e.dispatches)}")
        embedded = self.constants_embedded_bytes
        const = (f"constants: {format_bytes(self.constants_bytes)} ({format_bytes(embedded)} embedded in the "
                 f"FlatBuffer, {format_bytes(self.constants_bytes - embedded)} in the archive)")
        if self.parameters:
            const += f"; parameters: {format_bytes(self.parameters_bytes)} in {self.parameters}"
        lines.append(const)
        if self.flatbuffer_bytes is not None:
            lines.append(f"VM module (FlatBuffer): {format_bytes(self.flatbuffer_bytes)}, bytecode "
                         f"{format_bytes(self.bytecode_bytes or 0)}")
        lines.append("largest contributors:")
        lines += [f"  {format_bytes(b):>10}  {w}" for w, b in self.largest()]
        lines += [f"note: {n}" for n in self.notes]
        return lines


def dump_metadata(vmfb: Path) -> str:
    """`iree-dump-module --output=metadata VMFB`; StudioError naming the file when it cannot be read."""
    try:
        tool = runtime_tool("iree-dump-module")
    except ToolchainError as exc:
        raise StudioError(vmfb, str(exc)) from None
    proc = run_child([str(tool), "--output=metadata", str(vmfb)], timeout=300)
    if proc.returncode != 0:
        lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
        raise StudioError(vmfb, f"iree-dump-module cannot read it: {lines[-1] if lines else proc.returncode}")
    return proc.stdout


def parse_metadata(text: str) -> dict:
    """The sections of iree-dump-module's metadata output that we show."""
    out: dict = {"types": [], "dependencies": [], "imports": [], "exports": [], "rodata": [],
                 "flatbuffer": None, "bytecode": None}
    section = None
    headers = {"Required Types:": "types", "Module Dependencies:": "dependencies",
               "Imported Functions:": "imports", "Exported Functions:": "exports"}
    for line in text.splitlines():
        stripped = line.strip()
        if stripped in headers:
            section = headers[stripped]
            continue
        if not stripped or stripped.startswith("//"):
            section = None if not stripped else section
            continue
        if stripped.startswith("FlatBuffer:"):
            out["flatbuffer"] = int(stripped.split()[1])
            continue
        if stripped.startswith("Bytecode:"):
            out["bytecode"] = int(stripped.split()[1])
            continue
        m = _RODATA.match(line)
        if m:
            out["rodata"].append({"index": int(m.group(1)), "storage": m.group(2), "bytes": int(m.group(3)),
                                  "preview": m.group(4).strip()})
            continue
        if section == "dependencies":
            out["dependencies"].append(stripped)
            continue
        m = _ENTRY.match(line)
        if m and section in ("types", "imports", "exports"):
            out[section].append(m.group(2).strip())
    return out


def _member_name(executable: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", executable) + "_"


def inspect_module(ws: Workspace) -> ModuleContents:
    """What `ws`'s compiled module holds. StudioError (one line) without a build."""
    vmfb = ws.vmfb_path
    if vmfb is None or not vmfb.is_file():
        raise StudioError(ws.root, "no build; compile first")
    meta = parse_metadata(dump_metadata(vmfb))
    try:
        with zipfile.ZipFile(vmfb) as z:
            members = [{"name": i.filename, "bytes": i.file_size} for i in z.infolist()]
    except zipfile.BadZipFile:
        members = []  # a module with nothing to embed is a bare FlatBuffer
    notes: list[str] = []
    executables: list[Executable] = []
    hal = ws.snapshot_path("hal") if "hal" in ws.manifest.phases else None
    if hal is not None and hal.is_file():
        by_name: dict[str, Executable] = {}
        for rec in index_file(hal, "hal").dispatches:
            name = rec.executable or "?"
            e = by_name.setdefault(name, Executable(name, {}, [], None, None))
            e.exports.setdefault(rec.export or "?", []).append(rec.index)
            e.dispatches.append(rec.index)
        for e in by_name.values():
            m = next((m for m in members if m["name"].startswith(_member_name(e.name))), None)
            if m is not None:
                e.binary, e.binary_bytes = m["name"], m["bytes"]
        executables = list(by_name.values())
    else:
        notes.append("no hal snapshot: executables are not tied to dispatches")
    named = _name_rodata(meta["rodata"], ws.snapshot_path("vm") if "vm" in ws.manifest.phases else None)
    if named:
        pools = [r for r in meta["rodata"] if r["name"].startswith(CONSTANT_POOL)]
        constants = sum(r["bytes"] for r in pools)
        embedded = sum(r["bytes"] for r in pools if r["storage"] == "embedded")
    else:
        notes.append("no vm snapshot matching the module: constants counted from the archive only")
        constants, embedded = sum(m["bytes"] for m in members if m["name"].startswith(CONSTANT_POOL)), 0
    params = ws.params_path
    return ModuleContents(
        str(vmfb), vmfb.stat().st_size, meta["types"], meta["dependencies"],
        [_function(s) for s in meta["imports"]], [_function(s) for s in meta["exports"]],
        meta["flatbuffer"], meta["bytecode"], meta["rodata"], members, executables, constants,
        str(params) if params is not None else None, params.stat().st_size if params is not None else 0, notes,
        embedded)


def _name_rodata(rodata: list[dict], vm: Path | None) -> bool:
    """Names each rodata segment after its `vm.rodata` in the vm snapshot (IREE numbers the segments in
    the order they are declared); False, naming none, when the snapshot is missing or does not match."""
    if vm is None or not vm.is_file():
        return False
    with open(vm, encoding="utf-8", errors="replace") as f:
        names = [m.group(1) for m in map(_VM_RODATA.match, f) if m]
    if len(names) != len(rodata) or [r["index"] for r in rodata] != list(range(len(rodata))):
        return False
    for r, name in zip(rodata, names):
        r["name"] = name
    return True


def index_ranges(indexes: list[int]) -> str:
    """`#0-#3, #7`: dispatch numbers, runs shortened."""
    out, run = [], []
    for i in sorted(indexes):
        if run and i == run[-1] + 1:
            run.append(i)
            continue
        if run:
            out.append(f"#{run[0]}" if len(run) == 1 else f"#{run[0]}-#{run[-1]}")
        run = [i]
    if run:
        out.append(f"#{run[0]}" if len(run) == 1 else f"#{run[0]}-#{run[-1]}")
    return ", ".join(out)


def disassemble(ws: Workspace, executable: str) -> str:
    """The executable's binary as assembly (`objdump -d`), each function headed by the dispatches calling it."""
    import shutil
    import tempfile

    contents = inspect_module(ws)
    e = next((x for x in contents.executables if x.name == executable), None)
    if e is None:
        names = ", ".join(x.name for x in contents.executables)
        raise StudioError(ws.vmfb_path, f"no executable {executable!r} (the module has: {names})")
    if e.binary is None:
        raise StudioError(ws.vmfb_path, f"executable {executable!r} has no binary in the archive")
    objdump = shutil.which("objdump") or shutil.which("llvm-objdump")
    if objdump is None:
        raise StudioError(None, "disassembly needs objdump (GNU binutils) or llvm-objdump on PATH")
    with tempfile.TemporaryDirectory(prefix="npu-studio-disasm-") as tmp:
        with zipfile.ZipFile(ws.vmfb_path) as z:
            path = Path(z.extract(e.binary, tmp))
        # -l: function names from the binary's debug info (its symbol table has only the library query)
        proc = run_child([objdump, "-d", "-l", "--no-show-raw-insn", str(path)], timeout=300)
    if proc.returncode != 0:
        raise StudioError(ws.vmfb_path, f"objdump cannot read {e.binary}: {proc.stderr.strip()[:200]}")
    lines = []
    for line in proc.stdout.splitlines():
        m = re.match(r"^(.+)\(\):$", line)
        if m and m.group(1) in e.exports:
            lines.append(f"; dispatches {index_ranges(e.exports[m.group(1)])}")
        lines.append(line)
    return "\n".join(lines) + "\n"


def _function(signature: str) -> Function:
    m = _FUNCTION.match(signature)
    return Function(m.group("name") if m else signature.split("(", 1)[0], signature)
