"""The backend API: what differs between NPUs (docs/npu-backends.md).

`api` holds the `Backend` a plugin provides; `rules` the `@rule` form its
legality rules are written in; `registry` finds installed backends through
the `npu_studio.backends` entry point group. The bundled generic NPU is a
backend like any other (`npu_studio.core.npu.generic`), reached only
through the registry.
"""
