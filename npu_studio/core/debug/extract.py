"""One dispatch of a build as a standalone reproducer: a folder that needs nothing but IREE's tools.

`extract(ws, index, out)` writes

    dispatch.mlir          the flow module of that one dispatch: its flow.executable and a public
                           `@dispatch_<N>` that imports the operands, dispatches, exports the results
    sources/, benchmarks/  IREE's dump of the executable as codegen takes it, and its benchmark module
                           (--iree-hal-dump-executable-sources-to / -benchmarks-to)
    input<i>.npy           the operands the dispatch read, captured in the trace's own run
    iree_output<j>.npy     what IREE computed for it in that run
    onnx_reference<j>.npy  the ONNX tensor it is paired with (where it is), as the trace compares it
    flags.txt, run.sh      the exact iree-compile and iree-run-module command lines; run.sh compiles,
                           runs, compares (iree-run-module --expected_output, exact), exits 0 or 1
    reproducer.json        where it came from: workspace, model, seed, dispatch, pairing, tolerance

Why this route and not another: the operands are captured exactly where the
numerics trace gets its IREE side (the flow snapshot run dispatch by dispatch
through the one-function-per-dispatch module, `run/dispatches`), so the
stored output is the very result the trace judged, and a flow edit is in it.
The reproducer is that module cut down to the one dispatch, compiled from
`flow` with the same target flags, so its executable is compiled the same
way. IREE's break builds (`dispatch_break`) return a dispatch's output but
not its operands, and break only dispatches at the top of a function; the
executable benchmarks IREE dumps run on buffers they fill themselves, so
they time a dispatch but cannot be fed captured tensors (they are kept in
the folder for timing). `iree-run-module --expected_output` compares
byte for byte (`--equality_mode=exact`), so run.sh needs no Python.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
from iree.compiler import ir

from ..compile.options import target_flags
from ..compile.params import ParameterArchive
from ..compile.toolchain import compile_failure, iree_compile
from ..errors import StudioError
from ..executables.rebase import rebase_flags, substitution_flags
from ..ir.context import mlir_context
from ..run.dispatches import iree_dispatches
from ..run.dispatches.host import HostInterpreter
from ..run.dispatches.scalar_ops import NotInterpretable
from ..run.flow_pairing import FlowPairing
from ..run.onnx_reference import imported_model
from ..run.tolerance import upstream_types
from ..workspace import variants
from ..workspace.workspace import Workspace
from .numerics_trace import (build_inputs, check_traceable, compare, flow_index, flow_records, reference_values,
                             trace_inputs)

FORMAT = "npu-studio.reproducer"
DEVICE = "local-sync"  # as the trace's dispatch server runs it: one thread, the same workgroup order


class _Captured(Exception):
    """Stops the host program once the dispatch asked for has run."""


@dataclass
class Reproducer:
    folder: str
    index: int
    symbol: str
    function: str  # the reproducer module's function: dispatch_<index>
    inputs: list[str]  # file names, in operand order
    outputs: list[str]  # IREE's stored results, in result order
    references: list[str | None]  # per result: its ONNX reference file, or None (unpaired)
    onnx_tensor: str | None
    why_unpaired: str = ""
    max_abs_error: float | None = None  # IREE's stored result against the ONNX reference
    tolerance_bound: float | None = None  # tolerance * max(1, scale), as the trace judges
    departs: bool | None = None
    compile_flags: list[str] = field(default_factory=list)
    run_flags: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"format": FORMAT, "version": 1, **asdict(self)}

    def summary_lines(self) -> list[str]:
        lines = [f"dispatch #{self.index} ({self.symbol}) extracted to {self.folder}: "
                 f"{len(self.inputs)} input(s), {len(self.outputs)} output(s)"]
        if self.onnx_tensor is None:
            lines.append(f"  no ONNX reference: {self.why_unpaired}")
        else:
            lines.append(f"  against ONNX tensor {self.onnx_tensor!r}: max abs error {self.max_abs_error:.4g} "
                         f"(bound {self.tolerance_bound:.4g}): " + ("DEPARTS" if self.departs else "agrees"))
        lines += [f"  note: {n}" for n in self.notes]
        lines.append(f"  reproduce: sh {shlex.quote(str(Path(self.folder) / 'run.sh'))}  "
                     "(iree-compile and iree-run-module on PATH)")
        return lines


def command_line(workspace: Path, index: int, *, seed: int = 0, inputs=(), out: Path | None = None) -> str:
    """The `npu-studio extract` command for dispatch `index` on the same inputs as a trace
    (what `trace` prints for the first departing one)."""
    out = out if out is not None else Path(f"dispatch-{index}-reproducer")
    args = ["npu-studio", "extract", str(workspace), str(index), "--out", str(out)]
    args += [*(["--seed", str(seed)] if seed else []), *(a for p in inputs for a in ("--input", str(p)))]
    return shlex.join(args)


def _substitution_flags(ws: Workspace, b: variants.Build) -> list[str]:
    return [f for f in variants.options_for(ws, b.name).extra_flags if substitution_flags([f])]


def _absolute(flag: str, folder: Path) -> str:
    """A substitution flag of the reproducer (its file relative to the folder) with the file's full path."""
    head, _, path = flag.rpartition("=")
    return f"{head}={folder / path}" if flag.startswith("--iree-hal-substitute-") else flag


def _check_out(out: Path) -> None:
    """`out` must be new or an empty folder: nothing the user has there is ever overwritten."""
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise StudioError(out, "exists and is not an empty folder; give a new folder to --out")
    if not out.absolute().parent.is_dir():
        raise StudioError(out, "its parent folder does not exist")


def _capture(ws: Workspace, b: variants.Build, function: str, inputs: list[np.ndarray], index: int):
    """(operands, results) of dispatch `index` in the trace's own run of the flow program."""
    flow = b.snapshot_path("flow")
    vmfb = iree_dispatches.build(flow, b.folder / iree_dispatches.CACHE_DIR, ws.manifest.target,
                                 substitutions=_substitution_flags(ws, b), root=ws.root)
    captured: list = []

    def run_dispatch(k: int, site: ir.Operation, args: list) -> list:
        arrays = [a for a in args if isinstance(a, np.ndarray)]
        results = runner.run(k, arrays)
        if k == index:
            captured[:] = [arrays, results]
            raise _Captured
        return results

    ctx = mlir_context()
    module = ir.Module.parse(flow.read_text(encoding="utf-8"), ctx)
    archive = ParameterArchive(ws.params_path) if ws.params_path is not None else None
    with iree_dispatches.DispatchRunner(vmfb) as runner, ctx:
        host = HostInterpreter(module, archive, run_dispatch)
        try:
            host.initialize()
            host.call(function, inputs)
        except _Captured:
            pass
        except NotInterpretable as exc:
            raise StudioError(flow, f"the run stopped before dispatch #{index}: {exc}") from None
    if not captured:
        raise StudioError(flow, f"dispatch #{index} did not run on these inputs (it is behind control flow)")
    return captured[0], captured[1], iree_dispatches.notes(vmfb)


def _references(ws: Workspace, b: variants.Build, rec, inputs: list[np.ndarray], results: list[np.ndarray]):
    """Per result, the ONNX values it is compared with (as the trace views them, or None), and the
    trace's own judgement of the dispatch (`numerics_trace.compare`: one pairing, one tolerance rule)."""
    model = imported_model(ws.source_path)
    phase_index = flow_index(b)
    records = phase_index.dispatches
    pairing = FlowPairing(b.snapshot_path("flow"), phase_index, model)
    _, reference = reference_values(pairing, model, inputs, ws.source_path)
    pairings = []
    for r in records:  # in order, as the trace does: producers are paired before the dispatches that read them
        got = pairing.pair(r.index, results if r.index == rec.index else None)
        pairings = got if r.index == rec.index else pairings
    judged = compare(rec.index, rec, results, pairings, reference, None, 0.0,
                     upstream_types(records).get(rec.index, set()))
    refs: list[np.ndarray | None] = []
    for result, p in zip(results, pairings):
        view, ref = (None, None) if p.tensor is None else p.view(np.asarray(result), np.asarray(reference[p.tensor]))
        # compared on an interior (a padded result): no whole expected output for iree-run-module
        whole = view is not None and view.shape == np.shape(result)
        refs.append(np.ascontiguousarray(ref.astype(np.asarray(result).dtype)) if whole else None)
    return refs, judged


def _compile_flags(ws: Workspace) -> list[str]:
    return [*target_flags(ws.manifest.target), "--compile-from=flow"]


def _substituted(ws: Workspace, b: variants.Build, source: Path, folder: Path) -> tuple[list[str], list[str]]:
    """The workspace's substitutions fitted to the reproducer module, as flags relative to `folder`."""
    subs = _substitution_flags(ws, b)
    if not subs:
        return [], []
    with tempfile.TemporaryDirectory(prefix="npu-studio-extract-") as tmp:
        fitted = rebase_flags([str(iree_compile()), str(source), *_compile_flags(ws)], subs, Path(tmp),
                              what="the reproducer")
        flags = []
        for flag in fitted.flags:
            head, _, path = flag.rpartition("=")
            kept = folder / "substituted" / Path(path).name
            kept.parent.mkdir(exist_ok=True)
            shutil.copyfile(path, kept)
            flags.append(f"{head}={kept.relative_to(folder)}")
    return flags, fitted.notes


def _dump(ws: Workspace, folder: Path, flags: list[str]) -> None:
    """Compile once here: the module must build, and the executable's source and benchmark are kept."""
    why = compile_failure([
        str(iree_compile()), str(folder / "dispatch.mlir"), *(_absolute(f, folder) for f in flags),
        f"--iree-hal-dump-executable-sources-to={folder / 'sources'}",
        f"--iree-hal-dump-executable-benchmarks-to={folder / 'benchmarks'}", "-o", os.devnull], 900)
    if why is not None:
        raise StudioError(folder / "dispatch.mlir", f"iree-compile failed on the reproducer: {why}")


def extract(ws: Workspace, index: int, out: Path, inputs: list[np.ndarray] | None = None, *,
            seed: int = 0, build: str = variants.MAIN) -> Reproducer:
    """Write dispatch `index` of `ws`'s build (on the trace's inputs: `inputs` or seeded random) to `out`.

    The folder is written aside and renamed into place, so a failure leaves
    no half-written reproducer. StudioError (one line) for a workspace with
    no build, a dispatch that does not exist or cannot stand alone (dynamic
    shapes, a scalar operand computed at run time), an `out` that holds files.
    """
    out = Path(out).absolute()
    _check_out(out)
    b = check_traceable(ws, build)
    sig, inputs = trace_inputs(ws, inputs, seed)
    records = flow_records(b)
    if not 0 <= index < len(records):
        raise StudioError(b.snapshot_path("flow"), f"no dispatch #{index}: the build has {len(records)} "
                                                   f"(#0..#{len(records) - 1})")
    rec = records[index]
    flow = b.snapshot_path("flow")
    try:
        text = iree_dispatches.dispatch_module_text(flow.read_text(encoding="utf-8"), only=index)
    except iree_dispatches.DispatchBuildFailed as exc:
        raise StudioError(flow, f"dispatch #{index} cannot stand alone: {exc.reason}") from None
    operands, results, capture_notes = _capture(ws, b, sig.name, build_inputs(b, sig.name, inputs), index)
    refs, judged = _references(ws, b, rec, inputs, results)
    bound = judged.tolerance * max(1.0, judged.scale) if judged.paired else None
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.extract-", dir=out.parent))
    try:
        (staging / "dispatch.mlir").write_text(text, encoding="utf-8")
        names = _write_arrays(staging, operands, results, refs)
        sub_flags, sub_notes = _substituted(ws, b, staging / "dispatch.mlir", staging)
        compile_flags = [*_compile_flags(ws), *sub_flags]
        _dump(ws, staging, compile_flags)
        function = f"dispatch_{index}"
        run_flags = [f"--device={DEVICE}", f"--function={function}", *(f"--input=@{n}" for n in names[0])]
        repro = Reproducer(str(out), index, rec.export or rec.executable or "", function, names[0], names[1],
                           names[2], judged.onnx_tensor, judged.why_unpaired, judged.max_abs_error, bound,
                           judged.departs if judged.paired else None, compile_flags, run_flags,
                           [*capture_notes, *sub_notes])
        (staging / "run.sh").write_text(run_script(repro), encoding="utf-8")
        (staging / "run.sh").chmod(0o755)
        (staging / "flags.txt").write_text(_flags_text(repro), encoding="utf-8")
        meta = {**repro.to_dict(), "workspace": str(ws.root), "model": str(ws.source_path), "seed": seed,
                "build": build, "onnx_nodes": list(rec.onnx_nodes)}
        (staging / "reproducer.json").write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
        if out.is_dir():
            out.rmdir()  # empty (checked): the rename below puts the whole folder in its place
        staging.rename(out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return repro


def _write_arrays(folder: Path, operands, results, refs) -> tuple[list[str], list[str], list[str | None]]:
    names: tuple[list[str], list[str], list[str | None]] = ([], [], [])
    for i, a in enumerate(operands):
        names[0].append(f"input{i}.npy")
        np.save(folder / names[0][-1], np.asarray(a, order="C"))
    for j, r in enumerate(results):
        names[1].append(f"iree_output{j}.npy")
        np.save(folder / names[1][-1], np.asarray(r, order="C"))
    for j, ref in enumerate(refs):
        names[2].append(None if ref is None else f"onnx_reference{j}.npy")
        if ref is not None:
            np.save(folder / names[2][-1], ref)
    return names


def _flags_text(r: Reproducer) -> str:
    compile_line = shlex.join(["iree-compile", "dispatch.mlir", *r.compile_flags, "-o", "dispatch.vmfb"])
    run_line = shlex.join(["iree-run-module", "--module=dispatch.vmfb", *r.run_flags])
    return f"{compile_line}\n{run_line}\n"


def run_script(r: Reproducer) -> str:
    """run.sh: compile, run, compare byte for byte with IREE's stored result (exit 0 / 1); then, for
    information, with the ONNX reference at the trace's bound. It needs IREE's two tools and the
    shell's builtins alone (no dirname, mkdir, grep: a PATH of the venv's bin is enough)."""
    q = shlex.quote
    compile_cmd = " ".join(q(a) for a in ["iree-compile", "dispatch.mlir", *r.compile_flags,
                                          "-o", "dispatch.vmfb"])
    run_cmd = " ".join(q(a) for a in ["iree-run-module", "--module=dispatch.vmfb", *r.run_flags])
    expected = " ".join(q(f"--expected_output=@{n}") for n in r.outputs)
    lines = [
        "#!/bin/sh",
        f"# Dispatch #{r.index} ({' '.join(r.symbol.split())}) on its captured inputs, with IREE's tools alone.",
        "# Exit 0: iree-run-module computes exactly the stored IREE result (iree_output*.npy); 1: it does not.",
        "set -u",
        'case "$0" in */*) cd "${0%/*}" || exit 1 ;; esac',
        "for tool in iree-compile iree-run-module; do",
        '  command -v "$tool" >/dev/null 2>&1 || { echo "run.sh: $tool is not on PATH" >&2; exit 1; }',
        "done",
        f"{compile_cmd} || {{ echo 'run.sh: iree-compile failed' >&2; exit 1; }}",
        f"if {run_cmd} {expected} --equality_mode=exact >run.txt 2>&1; then",
        f"  echo 'reproduced: dispatch #{r.index} computes exactly the stored IREE result'",
        "else",
        "  while IFS= read -r line; do case $line in *FAILED*|*ERROR*|*error*) echo \"$line\" ;; esac; done <run.txt",
        "  echo '(the whole of it: run.txt)'",
        f"  echo 'NOT reproduced: dispatch #{r.index} differs from the stored IREE result (or did not run)'",
        "  exit 1",
        "fi",
    ]
    if r.onnx_tensor is not None and all(ref is not None for ref in r.references):
        bound = format(float(r.tolerance_bound), ".9g")
        thresholds = " ".join(f"--expected_{t}_threshold={bound}" for t in ("f16", "f32", "f64", "bf16"))
        refs = " ".join(q(f"--expected_output=@{n}") for n in r.references)
        lines += [
            f"# For information: against the ONNX reference, |IREE - ONNX| <= {bound} (the trace's bound)",
            f"if {run_cmd} {refs} --equality_mode=approximate --expected_rtol=0 {thresholds} "
            ">onnx.txt 2>&1; then",
            f"  echo {q(f'against ONNX tensor {r.onnx_tensor}: agrees')}",
            "else",
            f"  echo {q(f'against ONNX tensor {r.onnx_tensor}: DEPARTS (see onnx.txt)')}",
            "fi",
        ]
    lines.append("exit 0")
    return "\n".join(lines) + "\n"
