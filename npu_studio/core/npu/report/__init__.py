"""What is reported about NPU programs: coverage, the supported-ops document, the schedule view's arrays."""
