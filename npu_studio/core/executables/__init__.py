"""The build's executables (catalog.py) and their substitution with edited sources or configurations.

Imports workspace/ (where substitutions are recorded), compile/, ir/ and the
shared basics.
"""
