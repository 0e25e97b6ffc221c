"""npu-studio graph WORKSPACE [--phase P] [--build NAME] [--overlay KIND] [--trace-json F] [--measured-json F]
(--json OUT | --dot OUT | --svg OUT)"""

from __future__ import annotations

import json
from pathlib import Path

from ..core.compile.phases import SNAPSHOT_PHASES
from ..core.errors import StudioError, os_error

OVERLAYS = ("none", "unit", "cycles", "sram", "error", "measured", "edits")


def add_parser(sub) -> None:
    p = sub.add_parser(
        "graph", help="the dataflow graph of a build's dispatches, as JSON, DOT or SVG",
        description="One node per dispatch of the phase (and the model's inputs, outputs and parameters), "
                    "edges for the tensors between them, overlays from the NPU program, simulation, trace, "
                    "measured run and edits. JSON schema: docs/graph.schema.json.")
    p.add_argument("workspace", type=Path)
    p.add_argument("--phase", default="flow", choices=SNAPSHOT_PHASES)
    p.add_argument("--build", default="main", metavar="NAME", help="main (default) or a built variant")
    p.add_argument("--overlay", default="none", choices=OVERLAYS, help="what the DOT and SVG colour by")
    p.add_argument("--trace-json", type=Path, metavar="FILE",
                   help="a numerics trace (`npu-studio trace --json`) for the error overlay")
    p.add_argument("--measured-json", type=Path, metavar="FILE",
                   help="a measured run (`npu-studio measure --json`) for the measured overlay")
    out = p.add_mutually_exclusive_group(required=True)
    out.add_argument("--json", type=Path, metavar="OUT")
    out.add_argument("--dot", type=Path, metavar="OUT")
    out.add_argument("--svg", type=Path, metavar="OUT")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..core.graph.build import read_json_file, workspace_graph
    from ..core.graph.export import to_dot, to_svg
    from ..core.graph.layout import cached_layout
    from ..core.graph.style import Styler
    from ..core.textio import check_output_file, write_output
    from ..core.units import plural
    from ..core.workspace.workspace import Workspace

    out = args.json or args.dot or args.svg
    check_output_file(out)  # before any work
    trace = read_json_file(args.trace_json, "trace") if args.trace_json else None
    measured = read_json_file(args.measured_json, "measured") if args.measured_json else None
    ws = Workspace.open(args.workspace)
    graph = workspace_graph(ws, args.phase, args.build, trace=trace, measured=measured)
    if args.overlay != "none" and args.overlay not in graph.overlays:
        raise StudioError(ws.root, f"--overlay {args.overlay}: no data for it in this workspace"
                                   + (f" ({'; '.join(graph.notes)})" if graph.notes else ""))
    styler = Styler(graph, args.overlay)
    if args.json:
        text = json.dumps(graph.to_json(), indent=1)
    elif args.dot:
        text = to_dot(graph, styler)
    else:
        text = to_svg(graph, cached_layout(graph, ws.root), styler)
    try:
        write_output(out, text)
    except OSError as exc:
        raise os_error(out, exc, "cannot write") from None
    print(f"{out}: {plural(len(graph.dispatches()), 'dispatch')}, {plural(len(graph.edges), 'edge')}")
    for note in graph.notes:  # why something is missing (no edges, no ONNX nodes): not only in the JSON
        print(f"note: {note}")
    return 0
