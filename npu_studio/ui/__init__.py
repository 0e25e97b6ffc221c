"""Qt views over npu_studio.core: the shell here, one package per area below.

Shell: main_window (the window and its docks), studio (the app's intents as
background jobs on a core Session), jobs and workers, timeline, recent,
welcome, log_panel. Areas: ir/ (IR view, highlighter, find bar, parameters),
edit/ (editing, diffs, passes), dispatches/, executables/, npu/ (target and
coverage), schedule/ (the NPU schedule dock). Logic lives in the core.
"""
