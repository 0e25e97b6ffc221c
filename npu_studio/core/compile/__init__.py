"""Compiling: the IREE toolchain, phases, compile options, the compiler job, the ONNX importer, parameter archives.

Imports only the shared basics (errors, textio, processes, ...): it knows
nothing of workspaces, which are built on top of it.
"""
