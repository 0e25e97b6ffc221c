"""Reading MLIR: text and lexer, diagnostics, op counts, text diffs, the dispatch index and linalg analysis.

Works on text and parsed modules only: imports the shared basics and IREE's
MLIR bindings, never the compiler job or a workspace.
"""
