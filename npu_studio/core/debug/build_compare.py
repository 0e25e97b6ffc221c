"""Two builds of one model side by side: time, passes, counts, sizes, the first IR difference and outputs.

The builds are the workspace's own (`main`) and its build variants
(core/workspace/variants.py). A comparison reads what the builds left in the
workspace (snapshots, per-phase times, executable dumps, modules, and the
compile profiles when both were recorded: compile_profile.py) and runs both
modules on the same inputs; it writes nothing.

The first phase whose IR differs is found on the snapshots with locations
ignored (core/ir/diff.py normalisation, constants compared in full), and its
diff is the existing text diff with locations ignored. The staging folder a
build was compiled in is not a difference, nor are the bytes of the embedded
executable objects (their debug info names that folder): their code is
compared in the executable-targets IR, their size in `executable_bytes`.

Outputs: both modules run on the same inputs, drawn for build A's signature
(or given as .npy files); a build B that refuses them and declares other
element types gets them cast; outputs of other types are cast to A's before
comparing; `notes` says so.
"""

from __future__ import annotations

import re
import struct
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..errors import RunFailed
from ..ir.diff import DiffOptions, diff_texts, normalize_text
from ..run.numeric_gate import DEFAULT_TOLERANCE, OutputComparison, compare_arrays, gate_tolerance, load_inputs
from ..run.runner import pick_function, random_inputs, run_vmfb
from ..workspace.variants import resolve
from .compile_profile import load_profile

TOP_PASS_CHANGES = 10
# Where a build was staged shows in debug info (#llvm.di_file of the dumped executables): not a difference.
_STAGING_PATH = re.compile(r'[^"\s]*?\.staging-\d+-[A-Za-z0-9_]+/build')
# The executable objects embedded from the hal phase on carry that path in their debug info, so two builds of
# the same code differ there byte for byte: they are compared through the executable-targets IR they are made
# from, and by size (executable_bytes).
_ELF_BLOB = re.compile(r'"0x7F454C46[0-9A-Fa-f]*">(\s*:\s*vector<\d+xi8>)?')


@dataclass
class PhaseDelta:
    phase: str
    a_seconds: float | None
    b_seconds: float | None
    a_bytes: int
    b_bytes: int


@dataclass
class PassDelta:
    phase: str
    name: str
    a_wall: float
    b_wall: float

    @property
    def change(self) -> float:
        return self.b_wall - self.a_wall

    @property
    def ratio(self) -> float | None:
        return self.b_wall / self.a_wall if self.a_wall > 0 else None


@dataclass
class BuildComparison:
    a: str
    b: str
    phases: list[PhaseDelta]
    total_seconds: tuple[float | None, float | None]
    passes: list[PassDelta] | None  # None unless both builds have a current profile
    dispatches: tuple[int, int]
    executables: tuple[int, int]
    vmfb_bytes: tuple[int, int]
    executable_bytes: tuple[int | None, int | None]  # the embedded ELF objects in each module (llvm-cpu)
    first_difference: str | None  # the first phase whose IR differs; None: the same IR in every phase
    diff: str = ""
    diff_counts: tuple[int, int] = (0, 0)
    function: str = ""
    inputs: str = ""
    outputs: list[OutputComparison] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def same_outputs(self) -> bool:
        return all(o.bit_identical for o in self.outputs)

    @property
    def no_difference(self) -> bool:
        return self.first_difference is None and self.same_outputs

    def to_json(self) -> dict:
        data = asdict(self)
        data["passes"] = None if self.passes is None else [
            {**asdict(p), "change": p.change, "ratio": p.ratio} for p in self.passes]
        data["same_outputs"], data["no_difference"] = self.same_outputs, self.no_difference
        return data


def compare(ws, a: str, b: str, *, input_files: list[Path] | None = None, seed: int = 0,
            tolerance: float | None = DEFAULT_TOLERANCE, run_outputs: bool = True, context: int = 3) -> BuildComparison:
    build_a, build_b = resolve(ws, a), resolve(ws, b)
    phases = [p for p in build_a.phases if p in build_b.phases]
    deltas = [PhaseDelta(p, build_a.phases[p].get("seconds"), build_b.phases[p].get("seconds"),
                         int(build_a.phases[p].get("size_bytes", 0)), int(build_b.phases[p].get("size_bytes", 0)))
              for p in phases]
    notes = []
    missing = sorted(set(build_a.phases) ^ set(build_b.phases))
    if missing:
        notes.append(f"phases in only one build: {', '.join(missing)}")
    result = BuildComparison(
        a, b, deltas, (build_a.total_seconds, build_b.total_seconds), _pass_deltas(ws, a, b, notes),
        (_dispatch_count(build_a), _dispatch_count(build_b)),
        (_executable_count(build_a), _executable_count(build_b)),
        (_size(build_a.vmfb_path), _size(build_b.vmfb_path)),
        (elf_bytes(build_a.vmfb_path), elf_bytes(build_b.vmfb_path)),
        None, notes=notes)
    for phase in phases:
        pa, pb = build_a.snapshot_path(phase), build_b.snapshot_path(phase)
        if not same_ir(pa, pb):
            result.first_difference = phase
            d = diff_texts(_snapshot_text(pa), _snapshot_text(pb), f"{a}/{phase}", f"{b}/{phase}", DiffOptions())
            result.diff, result.diff_counts = d.unified(context), d.counts()
            break
    if run_outputs:
        _compare_outputs(ws, build_a, build_b, result, input_files, seed, tolerance)
    return result


def same_ir(a: Path, b: Path) -> bool:
    """The two snapshots hold the same IR once locations are ignored (constants compared in full)."""
    if a.read_bytes() == b.read_bytes():
        return True
    options = DiffOptions(constants=True)
    return normalize_text(_snapshot_text(a), options)[0] == normalize_text(_snapshot_text(b), options)[0]


def _snapshot_text(path: Path) -> str:
    text = _STAGING_PATH.sub("<build>", path.read_text(errors="replace"))
    return _ELF_BLOB.sub('"<ELF object>">', text)


def _compare_outputs(ws, build_a, build_b, result: BuildComparison, input_files, seed, tolerance) -> None:
    sig = pick_function(build_a.snapshot_path("input") or ws.snapshot_path("input"))
    if input_files:
        inputs = load_inputs(list(input_files), sig)
        result.inputs = ", ".join(Path(p).name for p in input_files)
    else:
        inputs = random_inputs(sig, seed)
        result.inputs = f"seeded random inputs (seed {seed})"
    result.function = sig.name
    if build_a.vmfb_path is None or build_b.vmfb_path is None:
        result.notes.append("a build has no module (compiled only part of the way): outputs not compared")
        return
    out_a = run_vmfb(build_a.vmfb_path, sig.name, inputs, parameters=build_a.params_path)
    try:
        out_b = run_vmfb(build_b.vmfb_path, sig.name, inputs, parameters=build_b.params_path)
    except RunFailed:
        sig_b = pick_function(build_b.snapshot_path("input") or ws.snapshot_path("input"), sig.name)
        cast = [x.astype(spec.numpy_dtype) for x, spec in zip(inputs, sig_b.inputs)]
        if all(x.dtype == y.dtype for x, y in zip(inputs, cast)):
            raise
        out_b = run_vmfb(build_b.vmfb_path, sig.name, cast, parameters=build_b.params_path)
        result.notes.append(f"{result.b} takes other input types: inputs cast to "
                            + ", ".join(str(x.dtype) for x in cast))
    if any(x.dtype != y.dtype for x, y in zip(out_a, out_b)):
        result.notes.append(f"{result.b} returns other types: outputs cast to {result.a}'s before comparing")
        out_b = [y.astype(x.dtype) for x, y in zip(out_a, out_b)]
    result.outputs = [compare_arrays(x, y, gate_tolerance(ws, x.dtype, tolerance), i)
                      for i, (x, y) in enumerate(zip(out_a, out_b))]


def _pass_deltas(ws, a: str, b: str, notes: list[str]) -> list[PassDelta] | None:
    prof_a, prof_b = load_profile(ws, a), load_profile(ws, b)
    if prof_a is None or prof_b is None:
        lacking = [n for n, p in ((a, prof_a), (b, prof_b)) if p is None]
        notes.append("no current compile profile of " + " and ".join(lacking)
                     + ": pass times not compared (record with `npu-studio profile WORKSPACE --build NAME`)")
        return None
    deltas = []
    for phase in prof_a.phases.keys() & prof_b.phases.keys():
        wa = {p.name: p.wall for p in prof_a.phases[phase].passes}
        wb = {p.name: p.wall for p in prof_b.phases[phase].passes}
        deltas += [PassDelta(phase, n, wa.get(n, 0.0), wb.get(n, 0.0)) for n in wa.keys() | wb.keys()]
    deltas.sort(key=lambda d: (-abs(d.change), d.phase, d.name))
    return deltas


def _dispatch_count(build) -> int:
    from ..ir.dispatch_index import index_workspace_phases

    flow = build.snapshot_path("flow")
    if flow is None or not flow.is_file():
        return 0
    return len(index_workspace_phases({"flow": flow})["flow"].dispatches)


def _executable_count(build) -> int:
    folder = build.executables_dir / "sources"
    return sum(1 for f in folder.glob("*.mlir")) if folder.is_dir() else 0


def _size(path: Path | None) -> int:
    return path.stat().st_size if path is not None and path.is_file() else 0


def elf_bytes(vmfb: Path | None) -> int | None:
    """Total size of the ELF objects embedded in a module (llvm-cpu executables); None when it has none.

    An ELF file's section header table is its last part: its end, read from
    the ELF header, is the object's size.
    """
    if vmfb is None or not vmfb.is_file():
        return None
    data = vmfb.read_bytes()
    total, found, at = 0, 0, data.find(b"\x7fELF")
    while at >= 0:
        header = data[at:at + 64]
        if len(header) == 64 and header[4] == 2 and header[5] == 1:  # 64-bit, little-endian
            shoff = struct.unpack_from("<Q", header, 0x28)[0]
            shentsize, shnum = struct.unpack_from("<HH", header, 0x3A)
            size = shoff + shentsize * shnum
            if 64 <= size <= len(data) - at:
                total, found = total + size, found + 1
                at = data.find(b"\x7fELF", at + size)
                continue
        at = data.find(b"\x7fELF", at + 4)
    return total if found else None
