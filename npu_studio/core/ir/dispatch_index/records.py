"""The dispatch index's records and their JSON form (schema: docs and tests)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from npu_studio.core.ir.linalg import OpDescription
from npu_studio.core.ir.mlir_text import TextRange

from .movement import DataMovement

SCHEMA_VERSION = 1


@dataclass
class DispatchRecord:
    index: int
    executable: str | None = None
    export: str | None = None
    workload: tuple[int | None, ...] | None = None
    root: OpDescription | None = None
    fused: list[str] = field(default_factory=list)
    onnx_nodes: list[str] = field(default_factory=list)
    root_onnx_nodes: list[str] = field(default_factory=list)
    call_sites: list[TextRange] = field(default_factory=list)
    producers: list[int] = field(default_factory=list)
    text_range: TextRange | None = None
    config: dict = field(default_factory=dict)
    target: str | None = None
    ops: list[OpDescription] = field(default_factory=list)
    # Integer MAC types and requantization chains (ir/linalg/requant.quantization_of)
    quant: dict | None = None
    movement: DataMovement | None = None  # a dispatch without a linalg op: what data it moves
    # The flow record's kind, set by linking: a dispatch has one kind in every phase, the one flow
    # judges with its call site in view (a pad is an insert of a splat there; later phases lower it).
    flow_kind: str | None = None

    @property
    def kind(self) -> str:
        """The root op's kind, or the data movement's (copy, slice, insert, pad); "" when unknown.
        A linked dispatch's is flow's, whatever its own phase shows."""
        if self.flow_kind:
            return self.flow_kind
        return self.root.kind if self.root is not None else self.movement.kind if self.movement else ""

    def to_json(self) -> dict:
        return {
            "index": self.index,
            "executable": self.executable,
            "export": self.export,
            "workload": list(self.workload) if self.workload is not None else None,
            "root": op_to_json(self.root) if self.root is not None else None,
            "fused": list(self.fused),
            "onnx_nodes": list(self.onnx_nodes),
            "root_onnx_nodes": list(self.root_onnx_nodes),
            "call_sites": [r.to_json() for r in self.call_sites],
            "producers": list(self.producers),
            "text_range": self.text_range.to_json() if self.text_range else None,
            "config": self.config,
            "target": self.target,
            "movement": self.movement.to_json() if self.movement is not None else None,
            "quant": self.quant,
        }


@dataclass
class PhaseIndex:
    phase: str
    path: str | None
    dispatches: list[DispatchRecord]
    op_counts_by_dialect: dict[str, int]
    num_executables: int
    num_dispatch_sites: int
    size_bytes: int
    num_lines: int

    def to_json(self) -> dict:
        return {
            "schema_version": SCHEMA_VERSION,
            "phase": self.phase,
            "path": self.path,
            "num_executables": self.num_executables,
            "num_dispatch_sites": self.num_dispatch_sites,
            "size_bytes": self.size_bytes,
            "num_lines": self.num_lines,
            "op_counts_by_dialect": dict(self.op_counts_by_dialect),
            "dispatches": [d.to_json() for d in self.dispatches],
        }


def op_to_json(d: OpDescription) -> dict:
    def t(x):
        return {"shape": list(x.shape), "dtype": x.dtype}

    return {
        "op_name": d.op_name,
        "kind": d.kind,
        "dims": dict(d.dims),
        "strides": list(d.strides),
        "dilations": list(d.dilations),
        "groups": d.groups,
        "loop_ranges": list(d.loop_ranges),
        "iterator_types": list(d.iterator_types),
        "loop_dims": list(d.loop_dims),
        "inputs": [t(x) for x in d.inputs],
        "outputs": [t(x) for x in d.outputs],
        "flops": d.flops,
        "bytes_read": d.bytes_read,
        "bytes_written": d.bytes_written,
        "dtype": d.dtype,
    }


def to_json(index: PhaseIndex) -> str:
    return json.dumps(index.to_json(), indent=2)
