"""Linking one dispatch across the phase indexes of a compile."""

from __future__ import annotations

from pathlib import Path

from .indexing import index_file
from .records import DispatchRecord, PhaseIndex


def _link_key(rec: DispatchRecord) -> str | None:
    return rec.export or rec.executable


def index_workspace_phases(paths_by_phase: dict[str, Path]) -> dict[str, PhaseIndex]:
    """Index every given phase and link them (see `link_phase_indexes`).

    Raises SnapshotParseError for the first snapshot that does not parse;
    a caller that wants the others anyway indexes them one by one with
    `index_file` and links what it has with `link_phase_indexes`.
    """
    out = {phase: index_file(p, phase) for phase, p in paths_by_phase.items()}
    link_phase_indexes(out)
    return out


def link_phase_indexes(indexes: dict[str, PhaseIndex]) -> None:
    """Renumber already-built phase indexes to the flow phase's order, in place.

    A dispatch keeps its flow-phase index in every phase it can be linked
    in (by export name and occurrence; dispatch-creation by program order,
    when it has as many sites as flow); each phase's records are sorted by
    that index, and records that cannot be linked are numbered after the
    linked ones. A linked record also takes from flow what its own phase
    cannot show: producers, the root op when the phase holds only binaries
    (hal), ONNX nodes when it names none. When dispatch-creation is linked,
    every record (flow's too) takes the ONNX nodes of its dispatch-creation
    region first: there each site still has its own body, while from flow
    on a site whose executable IREE deduplicated against an earlier one has
    only its call-site location. Without a flow index (missing, or it did
    not parse) nothing changes. Linking twice gives the same result.
    """
    flow = indexes.get("flow")
    if flow is None:
        return
    by_key: dict[tuple[str | None, int], DispatchRecord] = {}
    occurrence: dict[str | None, int] = {}
    for rec in flow.dispatches:
        k = _link_key(rec)
        n = occurrence.get(k, 0)
        occurrence[k] = n + 1
        by_key[(k, n)] = rec
    # dispatch-creation still has every dispatch inline, so its records name
    # each site's own nodes even where flow shares one executable.
    per_site: list[DispatchRecord] | None = None
    dc = indexes.get("dispatch-creation")
    if dc is not None and dc is not flow and len(dc.dispatches) == len(flow.dispatches):
        per_site = list(dc.dispatches)
        for rec, f in zip(per_site, flow.dispatches):
            rec.index = f.index
            rec.executable, rec.export = f.executable, f.export
            rec.flow_kind = f.kind or None
        for f, site in zip(flow.dispatches, per_site):
            _take_site_names(f, site)
    for phase, idx in indexes.items():
        if idx is flow or idx is dc or not idx.dispatches:
            continue
        occurrence = {}
        linked: list[DispatchRecord] = []
        unlinked: list[DispatchRecord] = []
        for rec in idx.dispatches:
            k = _link_key(rec)
            n = occurrence.get(k, 0)
            occurrence[k] = n + 1
            f = by_key.get((k, n))
            if f is None:
                unlinked.append(rec)
                continue
            rec.index = f.index
            rec.flow_kind = f.kind or None  # one kind per dispatch, in every phase
            if not rec.producers:
                rec.producers = list(f.producers)
            if rec.root is None:
                # hal holds only binaries: the op is the one flow saw
                rec.root, rec.fused, rec.ops = f.root, list(f.fused), list(f.ops)
                rec.root_onnx_nodes = list(f.root_onnx_nodes)
            if not rec.onnx_nodes:
                rec.onnx_nodes = list(f.onnx_nodes)
            if per_site is not None and f.index < len(per_site):
                _take_site_names(rec, per_site[f.index])
            linked.append(rec)
        linked.sort(key=lambda r: r.index)
        for i, rec in enumerate(unlinked):
            rec.index = len(flow.dispatches) + i
        idx.dispatches = linked + unlinked


def _take_site_names(rec: DispatchRecord, site: DispatchRecord) -> None:
    """Give rec the ONNX nodes its dispatch-creation region names (first)."""
    if site.onnx_nodes:
        rec.onnx_nodes = list(site.onnx_nodes) + [n for n in rec.onnx_nodes if n not in site.onnx_nodes]
    if site.root_onnx_nodes:
        rec.root_onnx_nodes = list(site.root_onnx_nodes)
