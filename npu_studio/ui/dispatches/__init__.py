"""The dispatch table, its detail panel, and the binding that keeps them in step with the session."""
