"""The Assembly dock: the open model's NPU program in its backend's assembly, linked to the schedule and the IR."""
