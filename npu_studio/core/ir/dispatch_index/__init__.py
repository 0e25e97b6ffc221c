"""The dispatch index: every dispatch of a compile, in every snapshot.

`index_file` parses one phase snapshot with the MLIR parser (see
mlir_text) and returns a `PhaseIndex`: one `DispatchRecord` per dispatch
site of the host program, in program order, with its executable, root
compute op (described by ir/linalg), the ops fused with it, the ONNX
nodes named by its locations, its producers and its text ranges.

Which ops are dispatch sites depends on the phase:
  dispatch-creation  flow.dispatch.workgroups / flow.dispatch.region
  flow               flow.dispatch
  stream..targets    stream.async.dispatch / stream.cmd.dispatch
  hal                hal.command_buffer.dispatch
Executables are flow/stream/hal.executable ops. IREE keeps executable and
export symbol names stable from flow on, so `link_phase_indexes`
links a dispatch across phases by (export name, occurrence); the
dispatch-creation phase has no names yet and is linked by program order.
Within one snapshot, a site calling an executable that IREE deduplicated
against an earlier site's names only its call-site location's nodes;
linking gives it the full list from its dispatch-creation region.
The vm phase has neither executables nor typed dispatch ops (only
`vm.call.variadic @hal.command_buffer.dispatch`) and indexes no dispatches.
"""

from __future__ import annotations

from .indexing import index_file, index_text
from .labels import fused_label
from .linking import index_workspace_phases, link_phase_indexes
from .provenance import onnx_names
from .records import SCHEMA_VERSION, DispatchRecord, PhaseIndex, op_to_json, to_json

__all__ = [
    "SCHEMA_VERSION",
    "DispatchRecord",
    "PhaseIndex",
    "fused_label",
    "index_file",
    "index_text",
    "index_workspace_phases",
    "link_phase_indexes",
    "onnx_names",
    "op_to_json",
    "to_json",
]
