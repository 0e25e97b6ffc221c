"""The NPU target: its description (TOML), energy and area, output stage, and where targets are kept."""
