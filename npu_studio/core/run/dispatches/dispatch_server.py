"""Child-process entry: python -m npu_studio.core.run.dispatches.dispatch_server VMFB

Reads one JSON request per line on stdin ({"function", "dir", "inputs"}),
calls the function on the .npy inputs, writes dir/out<j>.npy and answers
{"outputs": n} (or {"error": "..."}) on stdout. Ends when stdin closes.
"""

import json
import sys
from pathlib import Path

import numpy as np


def load_array(path) -> np.ndarray:
    """An .npy array; bf16 comes back from .npy as 2-byte void (numpy has no bf16) and is viewed as bf16 again."""
    a = np.load(path)
    if a.dtype.kind == "V" and a.dtype.itemsize == 2:
        from ...dtypes import numpy_value_dtype

        a = a.view(numpy_value_dtype("bf16"))
    return a


def main(argv: list[str]) -> int:
    import iree.runtime as rt

    config = rt.Config("local-sync")  # one thread: dispatches run one at a time anyway
    ctx = rt.SystemContext(config=config)
    ctx.add_vm_module(rt.VmModule.mmap(config.vm_instance, argv[0]))
    module = ctx.modules.module
    for line in sys.stdin:
        req = json.loads(line)
        try:
            result = module[req["function"]](*[load_array(p) for p in req["inputs"]])
            results = result if isinstance(result, (tuple, list)) else [result]
            for j, r in enumerate(results):
                np.save(Path(req["dir"]) / f"out{j}.npy", np.asarray(r.to_host() if hasattr(r, "to_host") else r))
            reply = {"outputs": len(results)}
        except Exception as exc:  # reported to the parent, which names the dispatch
            reply = {"error": " ".join(str(exc).split())[:500]}
        print(json.dumps(reply), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
