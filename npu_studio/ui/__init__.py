"""Qt views over npu_studio.core: the shell here, one package per area below.

Shell: main_window (the frame; implements shell.Shell, what an area may ask of it), areas (builds
every area from (session, studio, shell) and links them by signals), layout (default and saved dock
layout, fitting the screen), studio (the app's intents as background jobs on a core Session), jobs
and workers, opening (what opening a model or workspace does), timeline, recent, welcome, log_panel,
banner, build_summary, screenshot. Areas: edit/ (the IR pane, editing, diffs, passes), dispatches/,
executables/, npu/ (target and coverage), schedule/ (the NPU schedule dock), compile_debug/ (compile
profile, build comparison), trace/ (numerics against ONNX), module/ (what a .vmfb holds), sweep/
(design-space sweeps); ir/ holds the IR widgets they share (IR view, highlighter, find bar,
parameters). Logic lives in the core; docs/architecture.md has the rules.
"""
