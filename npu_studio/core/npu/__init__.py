"""The NPU: targets, legality rules, tiling, memory plan, NPU IR and dialect, the simulators (sim/, numerics/).

Reads the flow phase's dispatches (ir/) from a workspace; the functional check
runs IREE's CPU build (run/). Imports nothing above it but the session does.
"""
