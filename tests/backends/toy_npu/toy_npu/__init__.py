"""A toy NPU backend for NPU Studio's tests: its own rules, cost model, ISA and runner."""
