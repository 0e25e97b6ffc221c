"""Qt views over npu_studio.core: the shell here, one package per area below.

Shell: main_window (the window and its docks), layout (default and saved dock layout, fitting the
screen), studio (the app's intents as background jobs on a core Session), jobs and workers, opening
(what opening a model or workspace does), timeline, recent, welcome, log_panel, banner, screenshot,
tool_docks. Areas: ir/ (IR view, highlighter, find bar, parameters), edit/ (editing, diffs, passes),
dispatches/, executables/, npu/ (target and coverage), schedule/ (the NPU schedule dock),
compile_debug/ (compile profile, build comparison), trace/ (numerics against ONNX), module/ (what a
.vmfb holds), sweep/ (design-space sweeps). Logic lives in the core.
"""
