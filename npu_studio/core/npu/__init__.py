"""The NPU: a flow module planned for a target, simulated, checked and run inside IREE.

Subpackages, each importing only the ones below it (pyproject.toml's layers contract):

    hal/        the NPU program run inside IREE's runtime through an executable plugin
    store/      the NPU's files in a workspace (workspace_io) and the last simulation (sim_store)
    report/     coverage, the supported-ops document, the schedule view's arrays
    plan/       the passes from a flow module to an NPU program: legality rules, tiling, memory, schedule
    sim/        timing simulation            numerics/   functional simulation
    program/    the NPU program: its IR and JSON, the `npu` MLIR dialect
    target/     the target description, its energy and area, its output stage, where targets are kept

Reads the flow phase's dispatches (ir/) from a workspace; the functional check
runs IREE's CPU build (run/). Imports nothing above it but the session does.
"""
