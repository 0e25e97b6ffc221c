"""NPU Studio: a workbench for bringing up an NPU behind IREE."""
import logging

__version__ = "0.1.0"

# Records go nowhere unless asked for (`npu-studio -v`, the app's Log dock): without a handler
# of ours, Python would print warnings on stderr by itself and change every command's output.
logging.getLogger(__name__).addHandler(logging.NullHandler())
