"""The bundle's `npu-studio` executable: the same entry point as the installed command."""

import sys

from npu_studio.cli import main

if __name__ == "__main__":
    sys.exit(main())
