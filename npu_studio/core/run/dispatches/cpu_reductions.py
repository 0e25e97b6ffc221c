"""How IREE's CPU build orders each dispatch's float reductions.

A float sum's result depends on the order of its additions. IREE's
llvm-cpu codegen fixes that order per dispatch in its lowering config,
chosen for the host CPU: the reduction loops are tiled by
`vector_reduction` (tile loops outermost, in loop order), each tile is
walked in loop order, and every step accumulates into the one running
f32 value (no split reductions, no tree sums: LLVM gets no `reassoc`).
A product under the sum is fused into an FMA when the vector contraction
lowers to outer products (or stays scalar); when it lowers to a dot
(`vector.reduction`), the product is rounded first.

`reduction_configs` compiles the dispatch module (`iree_dispatches`) to
the `executable-configurations` phase once per flow snapshot (cached in
the same folder) and reads the lowering config of every reducing op.
"""

from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ...compile.options import target_flags
from ...compile.toolchain import iree_compile
from ...workspace.confine import folder_inside
from .iree_dispatches import cache_key, compile_or_raise, dispatch_module_text, move_into_cache


@dataclass(frozen=True)
class ReductionConfig:
    """IREE's lowering config of one op that reduces (in IREE's own loop numbering)."""

    pipeline: str
    iterator_types: tuple[str, ...]
    vector_parallel: tuple[int, ...]  # vector_common_parallel, 0 on reduction loops
    vector_reduction: tuple[int, ...]  # 0 on parallel loops

    def reduction_tiles(self) -> tuple[int, ...]:
        return tuple(t for t, it in zip(self.vector_reduction, self.iterator_types) if it == "reduction")

    def parallel_tiles(self) -> tuple[int, ...]:
        return tuple(t for t, it in zip(self.vector_parallel, self.iterator_types) if it == "parallel")


_EXECUTABLE = re.compile(r"^  hal\.executable (?:private |public )?@(\S+) \{", re.M)
_PIPELINE = re.compile(r"pipeline = #iree_cpu\.pipeline<(\w+)>")
_OP = re.compile(r"iterator_types = \[([^\]]*)\][^\n]*lowering_config = #iree_cpu\.lowering_config<([^>\n]*)>")


def _ints(config: str, key: str) -> tuple[int, ...] | None:
    m = re.search(rf"\b{key} = \[([^\]]*)\]", config)
    return None if m is None else tuple(int(v) for v in m.group(1).split(",") if v.strip())


def parse_configs(text: str) -> dict[str, list[ReductionConfig]]:
    """Executable name -> the lowering configs of its reducing ops, in order."""
    out: dict[str, list[ReductionConfig]] = {}
    starts = list(_EXECUTABLE.finditer(text))
    for k, m in enumerate(starts):
        body = text[m.end():starts[k + 1].start() if k + 1 < len(starts) else len(text)]
        pipe = _PIPELINE.search(body)
        configs = []
        for op in _OP.finditer(body):
            iters = tuple(s.strip().strip('"').split(".")[-1].strip(">").strip("<")
                          for s in op.group(1).split(","))
            iters = tuple("reduction" if "reduction" in s else "parallel" for s in iters)
            red = _ints(op.group(2), "vector_reduction")
            if "reduction" not in iters or red is None or len(red) != len(iters):
                continue
            par = _ints(op.group(2), "vector_common_parallel") or (0,) * len(iters)
            configs.append(ReductionConfig(pipe.group(1) if pipe else "", iters, par, red))
        out[m.group(1)] = configs
    return out


def reduction_configs(flow_path: Path, cache_dir: Path, target: str = "llvm-cpu",
                      timeout: float = 900, *, root: Path) -> dict[str, list[ReductionConfig]]:
    """The reducing ops' lowering configs IREE chooses for this flow snapshot's executables (cached
    in `cache_dir`, inside the workspace `root`)."""
    cache_dir = folder_inside(root, cache_dir)
    flow_text = Path(flow_path).read_text(encoding="utf-8")
    cached = cache_dir / f"configs-{cache_key(flow_text, target)}.mlir"
    if not cached.is_file():
        with tempfile.TemporaryDirectory(prefix="npu-studio-configs-") as tmp_dir:
            src = Path(tmp_dir) / "dispatches.mlir"
            src.write_text(dispatch_module_text(flow_text), encoding="utf-8")
            out = Path(tmp_dir) / cached.name
            compile_or_raise([str(iree_compile()), str(src), *target_flags(target), "--compile-from=flow",
                              "--compile-to=executable-configurations", "-o", str(out)],
                             flow_path, "the dispatch configurations", timeout)
            for old in cached.parent.glob("configs-*.mlir"):  # one per cache folder
                old.unlink(missing_ok=True)
            move_into_cache(out, cached)
    return parse_configs(cached.read_text(encoding="utf-8"))
