"""NPU Studio: a workbench for bringing up an NPU behind IREE."""
__version__ = "0.1.0"
