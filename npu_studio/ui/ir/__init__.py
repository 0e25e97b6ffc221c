"""Reading IR in the app: the IR view, its MLIR highlighter, the find bar, parameter hovers."""
