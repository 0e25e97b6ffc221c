"""From a flow module to an NPU program: legality rules, tiling, tile search, memory plan, schedule, the passes."""
