"""Child-process entry: python -m npu_studio.core.run_vmfb VMFB FUNCTION OUT_DIR [INPUT.npy ...]

Writes OUT_DIR/output<i>.npy and prints the number of outputs.
"""

import sys
from pathlib import Path

import numpy as np


def main(argv: list[str]) -> int:
    import iree.runtime as rt

    vmfb, function, out_dir, *inputs = argv
    config = rt.Config("local-task")
    ctx = rt.SystemContext(config=config)
    ctx.add_vm_module(rt.VmModule.mmap(config.vm_instance, vmfb))
    module = ctx.modules.module
    if function not in module.vm_module.function_names:
        print(f"no function @{function} in {vmfb}", file=sys.stderr)
        return 2
    result = module[function](*[np.load(p) for p in inputs])
    results = result if isinstance(result, (tuple, list)) else [result]
    for i, r in enumerate(results):
        np.save(Path(out_dir) / f"output{i}.npy", np.asarray(r.to_host() if hasattr(r, "to_host") else r))
    print(len(results))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
