"""The numerics trace in the app: a dock with the per-dispatch error plot, and its controller."""
