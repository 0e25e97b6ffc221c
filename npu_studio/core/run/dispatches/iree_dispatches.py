"""Every dispatch of a `flow` module as its own function, compiled by IREE for the CPU.

`dispatch_module_text` keeps the module's executables and device global and
replaces the host program by one public function per dispatch site
(`@dispatch_<k>`): import the operands, the site's own `flow.dispatch`,
export the results. `iree-compile --compile-from=flow` builds it once per
flow snapshot (cached in the workspace under npu/check/); a child process
(`dispatch_server`) then runs any dispatch on given arrays. The NPU check
computes fallback dispatches this way and compares every NPU dispatch with
IREE's result on the same inputs; the numerics trace (core/debug) runs the
whole program dispatch by dispatch to compare each with the ONNX model.
"""

from __future__ import annotations

import hashlib
import json
import os
import select
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Sequence

import numpy as np
from iree.compiler import ir

from ... import processes
from ...compile.options import target_flags
from ...compile.toolchain import compile_failure, compiler_version, iree_compile
from ...errors import StudioError
from ...textio import parse_json, read_bytes, read_text
from ...executables.rebase import rebase_flags, substitution_flags
from ...ir.context import first_diagnostic, mlir_context
from ...ir.mlir_text import SnapshotParseError
from ...workspace import trust
from ...workspace.confine import folder_inside
from .. import time_budget
from .dispatch_server import load_array
from .host import segments, tied_operands

CACHE_DIR = "npu/check"
SUBSTITUTED = "substituted"  # a dispatch module with the workspace's substitutions, beside the plain one


class DispatchBuildFailed(StudioError):
    pass


def _literal(k: int, v: ir.Value) -> str:
    """The constant a scalar argument or workload value has on the host."""
    owner = v.owner
    if not isinstance(owner, ir.Block) and owner.operation.name == "arith.constant":
        return str(owner.operation.attributes["value"]).split(" : ")[0]
    raise DispatchBuildFailed(None, f"dispatch #{k} takes a scalar computed at run time")


def _wrapper(k: int, site: ir.Operation) -> str:
    seg = segments(site)
    workload, arguments = seg[0], seg[1]
    if any(seg[2:4]):
        raise DispatchBuildFailed(None, f"dispatch #{k} has dynamic shapes")
    entry = str(ir.ArrayAttr(site.attributes["entry_points"])[0])
    lines, params, arg_names = [], [], []
    for i, v in enumerate(arguments):
        t = str(v.type)
        if isinstance(v.type, ir.RankedTensorType):
            params.append(f"%in{i}: !hal.buffer_view")
            lines.append(f'    %t{i} = hal.tensor.import %in{i} "in{i}" : !hal.buffer_view -> {t}')
            arg_names.append(f"%t{i}")
        else:
            lines.append(f"    %t{i} = arith.constant {_literal(k, v)} : {t}")
            arg_names.append(f"%t{i}")
    work = []
    for i, v in enumerate(workload):
        lines.append(f"    %w{i} = arith.constant {_literal(k, v)} : {v.type}")
        work.append(f"%w{i}")
    tied = tied_operands(site)
    res_types = []
    for j, r in enumerate(site.results):
        res_types.append(f"%t{tied[j]}" if j < len(tied) and tied[j] >= 0 else str(r.type))
    n = len(site.results)
    res = f"%r:{n}" if n > 1 else "%r"
    wl = f"[{', '.join(work)}]" if work else ""
    in_types = ", ".join(str(v.type) for v in arguments)
    out_types = ", ".join(res_types)
    lines.append(f"    {res} = flow.dispatch {entry}{wl}({', '.join(arg_names)}) : ({in_types}) -> "
                 f"{'(' + out_types + ')' if n > 1 else out_types}")
    rets, ret_types = [], []
    for j, r in enumerate(site.results):
        ref = f"%r#{j}" if n > 1 else "%r"
        lines.append(f'    %e{j} = hal.tensor.export {ref} "out{j}" : {r.type} -> !hal.buffer_view')
        rets.append(f"%e{j}")
        ret_types.append("!hal.buffer_view")
    head = (f"  util.func public @dispatch_{k}({', '.join(params)}) -> ({', '.join(ret_types)}) "
            "attributes {iree.abi.stub} {")
    return "\n".join([head, *lines, f"    util.return {', '.join(rets)} : {', '.join(ret_types)}", "  }"])


def _executable_of(site: ir.Operation) -> str:
    """The flow.executable symbol a dispatch site calls (`@exe::@entry` -> `exe`)."""
    entry = ir.SymbolRefAttr(ir.ArrayAttr(site.attributes["entry_points"])[0])
    return entry.value[0]  # [root, nested...]


def dispatch_module_text(flow_text: str, only: int | None = None) -> str:
    """The flow module with one `@dispatch_<k>` function per site instead of its host program.

    A site that cannot be wrapped (dynamic shapes, a scalar known only at
    run time) is left out, with a comment saying why. `only`: that one
    site's function and executable alone (a standalone reproducer);
    DispatchBuildFailed when it cannot be wrapped or does not exist.
    """
    from ...ir.flow_graph import FlowGraph

    ctx = mlir_context()
    module = ir.Module.parse(flow_text, ctx)
    graph = FlowGraph(module.operation)
    sites = graph.sites
    if only is not None:
        sites = [s for s in sites if s.index == only]
        if not sites:
            raise DispatchBuildFailed(None, f"no dispatch #{only}: the module has {len(graph.sites)} "
                                            f"(#0..#{len(graph.sites) - 1})")
    wrappers = []
    for site in sites:
        try:
            wrappers.append(_wrapper(site.index, site.op))
        except DispatchBuildFailed as exc:  # left out; needed only if the simulation asks for it
            if only is not None:
                raise
            wrappers.append(f"  // dispatch_{site.index} left out: {exc.reason}")
    executables = {_executable_of(s.op) for s in sites} if only is not None else None
    for op in list(module.body.operations):
        op = op.operation
        keep = (op.name == "flow.executable" and (
            executables is None or ir.StringAttr(op.attributes["sym_name"]).value in executables)) or (
            op.name == "util.global" and "hal.device" in str(ir.TypeAttr(op.attributes["type"]).value))
        if not keep:
            op.erase()
    if not wrappers:  # a model IREE folded to host work only: iree-compile makes no VM module without a function
        wrappers.append("  util.func public @no_dispatches() {\n    util.return\n  }")
    text = module.operation.get_asm(enable_debug_info=False)
    end = text.rstrip().rfind("}")
    return text[:end] + "\n".join(wrappers) + "\n}\n"


def cache_key(flow_text: str, target: str, substitutions: Sequence[str] = ()) -> str:
    h = hashlib.sha256(flow_text.encode())
    h.update(target.encode())
    h.update(compiler_version().encode())
    for _, name, path in substitution_flags(substitutions):
        h.update(name.encode())
        h.update(path.read_bytes())  # the substituted text is part of the build
    return h.hexdigest()[:16]



def compile_or_raise(cmd: list[str], flow_path: Path, what: str, timeout: float) -> None:
    """Run iree-compile on something derived from `flow_path`; DispatchBuildFailed names `what` and why."""
    why = compile_failure(cmd, timeout)
    if why is not None:
        raise DispatchBuildFailed(flow_path, f"iree-compile failed on {what}: {why}")


def build(flow_path: Path, cache_dir: Path, target: str = "llvm-cpu", timeout: float = 900,
          substitutions: Sequence[str] = (), *, root: Path) -> Path:
    """The compiled dispatch module for this flow snapshot (compiled once, then cached).

    `substitutions` (--iree-hal-substitute-executable-* flags) are fitted to
    this module's buffer layout first (`executables/rebase`): a substituted
    `hal.executable` has the offsets and bindings of the full build. What
    became of each is in `notes(vmfb)`. A failed build leaves nothing in
    `cache_dir`, which must lie in the workspace `root` (no link on the way: made before any compile).
    """
    cache_dir = folder_inside(root, cache_dir)
    flow_text = read_text(flow_path)  # BadFile naming it: missing, a folder, not UTF-8
    key = cache_key(flow_text, target, substitutions)
    prefix = SUBSTITUTED if substitution_flags(substitutions) else "dispatches"
    vmfb = cache_dir / f"{prefix}-{key}.vmfb"
    if vmfb.is_file():
        return vmfb
    with tempfile.TemporaryDirectory(prefix="npu-studio-dispatches-") as tmp_dir:
        src = Path(tmp_dir) / vmfb.with_suffix(".mlir").name
        try:
            module_text = dispatch_module_text(flow_text)
        except ir.MLIRError as exc:  # a damaged or hand-edited snapshot: its first error, at line:col
            raise SnapshotParseError(flow_path, *first_diagnostic(exc)) from None
        src.write_text(module_text, encoding="utf-8")
        out = Path(tmp_dir) / vmfb.name
        base = [str(iree_compile()), str(src), *target_flags(target), "--compile-from=flow"]
        fitted = rebase_flags(base, substitutions, Path(tmp_dir) / "rebase", what="the dispatch module",
                              timeout=timeout)
        made = [(src, vmfb.with_suffix(".mlir"))]
        if substitution_flags(substitutions):
            notes = Path(tmp_dir) / "notes.json"
            notes.write_text(json.dumps(fitted.notes), encoding="utf-8")
            made.append((notes, vmfb.with_suffix(".json")))
        compile_or_raise([*base, *fitted.flags, "-o", str(out)], flow_path, "the dispatch module", timeout)
        for old in vmfb.parent.glob(f"{prefix}-*.vmfb"):  # one build of each kind per cache folder
            for suffix in (".vmfb", ".mlir", ".json"):
                old.with_suffix(suffix).unlink(missing_ok=True)
        # src first: a vmfb in the cache always has its source beside it (`_left_out` reads it).
        for made_path, dest in (*made, (out, vmfb)):
            move_into_cache(made_path, dest)
    return vmfb


def move_into_cache(made: Path, dest: Path) -> None:
    """Move a file made in a temporary folder (maybe another file system) to `dest` in a confined
    cache folder: copied to a new name beside it, then renamed over it (a link there is replaced)."""
    staged = dest.with_name(f"{dest.name}.{os.getpid()}-{os.urandom(4).hex()}.tmp")  # never shared
    try:
        with open(made, "rb") as fin, open(staged, "xb") as fout:
            shutil.copyfileobj(fin, fout, 1 << 20)
        os.replace(staged, dest)
    finally:
        staged.unlink(missing_ok=True)


def notes(vmfb: Path) -> list[str]:
    """What became of each substitution in this dispatch module (empty for one built without)."""
    path = Path(vmfb).with_suffix(".json")
    return list(parse_json(read_bytes(path), path)) if path.is_file() else []  # BadFile: damaged, too deep


def _left_out(vmfb: Path, index: int) -> str | None:
    """Why `dispatch_module_text` left dispatch `index` out of this build, if it did."""
    src = vmfb.with_suffix(".mlir")
    mark = f"// dispatch_{index} left out: "
    if src.is_file():
        for line in src.read_text(encoding="utf-8").splitlines():
            if line.strip().startswith(mark):
                return line.strip()[len(mark):]
    return None


class DispatchRunner:
    """A child process running dispatches of a compiled dispatch module (context manager)."""

    def __init__(self, vmfb: Path, timeout: float | None = None):
        self.vmfb = Path(vmfb)
        self.timeout = timeout  # per call; None: from the module's and the call's bytes (time_budget)
        trust.require_for_path(self.vmfb, f"running the dispatches of {self.vmfb.name}")
        self._tmp = tempfile.TemporaryDirectory(prefix="npu-studio-check-")
        # killed with us (its own process group, and when we die)
        self._proc = processes.start_child(
            [*processes.module_command("npu_studio.core.run.dispatches.dispatch_server"), str(self.vmfb)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self._calls = 0

    def run(self, index: int, arrays: list[np.ndarray]) -> list[np.ndarray]:
        """Outputs of dispatch `index` on the tensor arguments `arrays`."""
        d = Path(self._tmp.name) / str(self._calls)
        d.mkdir()
        self._calls += 1
        paths = []
        for i, a in enumerate(arrays):
            p = d / f"in{i}.npy"
            np.save(p, np.asarray(a, order="C"))  # not ascontiguousarray: it makes a rank-0 array rank 1
            paths.append(str(p))
        self._proc.stdin.write(json.dumps({"function": f"dispatch_{index}", "dir": str(d), "inputs": paths}) + "\n")
        self._proc.stdin.flush()
        limit = self.timeout if self.timeout is not None else time_budget.iree_run_seconds(
            time_budget.file_bytes(self.vmfb) + 2 * time_budget.array_bytes(arrays))
        # The server answers each request with one line, so nothing waits in our read buffer.
        if not select.select([self._proc.stdout], [], [], limit)[0]:
            processes.stop(self._proc, f"dispatch #{index}: no result within {limit:g} s")
            raise StudioError(self.vmfb, f"dispatch #{index}: IREE's CPU build gave no result within "
                                         f"{time_budget.seconds_text(limit)}; stopped")
        line = self._proc.stdout.readline()
        if not line:
            err = [ln for ln in self._proc.stderr.read().splitlines() if ln.strip()]
            raise StudioError(self.vmfb, f"dispatch #{index} failed in IREE: {err[-1] if err else 'no output'}")
        reply = json.loads(line)
        if "error" in reply:
            why = _left_out(self.vmfb, index) or reply["error"]
            raise StudioError(self.vmfb, f"dispatch #{index} cannot run on IREE's CPU build: {why}")
        outs = [load_array(d / f"out{j}.npy") for j in range(reply["outputs"])]
        for p in d.iterdir():
            p.unlink()
        d.rmdir()
        return outs

    def close(self) -> None:
        if self._proc.poll() is None:
            self._proc.stdin.close()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                processes.stop(self._proc)
        for s in (self._proc.stdout, self._proc.stderr):
            s.close()
        self._tmp.cleanup()

    def __enter__(self) -> "DispatchRunner":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
