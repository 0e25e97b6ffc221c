"""Qt views over npu_studio.core. Logic lives in the core; these only show it."""
