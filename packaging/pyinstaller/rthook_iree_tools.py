# PyInstaller runtime hook: where the bundle keeps iree-compile and the other compiler tools.
# iree.compiler looks for them next to its own modules, which a bundle keeps in an archive,
# not in a folder; IREE_TOOL_PATH is the compiler package's own way to point it elsewhere.
import os
import sys

os.environ.setdefault("IREE_TOOL_PATH", os.path.join(sys._MEIPASS, "iree", "compiler", "_mlir_libs"))
