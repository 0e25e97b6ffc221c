"""Subcommands of `npu-studio`; see npu_studio/cli.py."""
