"""Headless core of NPU Studio. Nothing in this package may import Qt."""
