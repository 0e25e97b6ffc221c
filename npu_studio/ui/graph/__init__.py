"""The graph area: the dataflow graph of the build's dispatches, with overlays, search and a build beside it."""
