"""What the compiled module holds, in the app: a dock and its controller."""
