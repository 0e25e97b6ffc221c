"""The NPU's files in a workspace: the program, the target it was built with, the last simulation."""
