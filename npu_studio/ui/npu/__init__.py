"""The NPU dock: target picker and editor, coverage and fallbacks."""
