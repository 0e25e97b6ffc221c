"""The NPU program: its IR and JSON form, the `npu` MLIR dialect and a fast reader of its text."""
