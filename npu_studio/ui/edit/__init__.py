"""Editing a phase and looking at changes: the edit controller, diff dialog and view, the pass view."""
