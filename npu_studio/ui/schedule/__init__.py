"""The NPU schedule dock: the Gantt chart of engines, its summary, span rectangles, and its controller."""
