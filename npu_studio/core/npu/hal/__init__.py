"""The NPU program run inside IREE's runtime: NPU dispatches through a HAL executable plugin.

`plugin_build` builds the C plugin (plugin_src/) into the user cache;
`replacement` writes the executable that hands a dispatch to the plugin;
`variant` builds and keeps the NPU build of a workspace; `inprocess` runs
it with the functional simulator behind the plugin; `exec_desc` and
`exec_lower` describe each NPU dispatch for the plugin's C interpreter,
which `standalone` runs under iree-run-module and iree-benchmark-module;
`npu_run` compares either run with the CPU build and onnxruntime. docs/npu-to-hal.md tells the whole path.
"""
