"""`python -m npu_studio ...` is `npu-studio ...`: the app, or a headless command."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
