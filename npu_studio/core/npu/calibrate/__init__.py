"""Measured cycles against simulated, and target keys fitted to them (docs/npu-calibrate.md).

measured.py   the measured-cycles CSV (per dispatch or per task), read with file:line errors
fit.py        the bounded least-squares fit of target keys through the timing simulator
target_text.py  the fitted values written into the target's own TOML text
"""
