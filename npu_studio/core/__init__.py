"""Headless core of NPU Studio: everything the app and the CLI do, without Qt.

Packages by concern; imports only point down (checked by import-linter, see
pyproject.toml and docs/architecture.md):

    session.py  sweep/         the open model's state and selection, with change events; design-space sweeps
    npu/  debug/               the NPU pipeline and simulators; looking into builds
    run/                       running a build: runner, inputs, numeric gate, kernel timing
    executables/               the build's executables and their substitution
    workspace/                 the workspace folder and its transactions
    compile/  ir/              the compiler and importer; reading MLIR text
    errors units dtypes textio processes paths   shared basics
"""
