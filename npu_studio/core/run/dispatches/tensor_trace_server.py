"""Child-process entry: python -m npu_studio.core.run.dispatches.tensor_trace_server VMFB FUNCTION OUT_DIR [IN.npy ...] [--parameters=IRPA]

Runs FUNCTION of a module compiled with `--iree-flow-trace-dispatch-tensors`
with a HAL debug sink that receives every traced tensor list. Writes
OUT_DIR/t<k>_<j>.npy (the j-th tensor of the k-th trace event),
OUT_DIR/output<i>.npy, and prints one JSON line:
{"events": [[label, count], ...], "outputs": n}.
"""

import json
import sys
from pathlib import Path

import numpy as np


def main(argv: list[str]) -> int:
    import iree.runtime as rt

    params = [a.split("=", 1)[1] for a in argv if a.startswith("--parameters=")]
    vmfb, function, out_dir, *inputs = [a for a in argv if not a.startswith("--parameters=")]
    out = Path(out_dir)
    config = rt.Config("local-sync")  # one thread: trace events arrive in execution order
    events: list[list] = []

    def on_trace(label, buffer_views):
        for j, bv in enumerate(buffer_views):
            host = rt.DeviceArray(config.device, bv, implicit_host_transfer=True).to_host()
            np.save(out / f"t{len(events)}_{j}.npy", np.asarray(host))
        events.append([label, len(buffer_views)])

    sink = rt.HalModuleDebugSink(on_trace)
    modules = [rt.create_hal_module(config.vm_instance, config.device, debug_sink=sink)]
    if params:
        from npu_studio.core.compile.params import ParameterArchive

        modules.append(rt.create_io_parameters_module(config.vm_instance, ParameterArchive(params[0]).provider()))
    modules.append(rt.VmModule.mmap(config.vm_instance, vmfb))
    ctx = rt.SystemContext(vm_modules=modules, config=config)
    module = ctx.modules.module
    if function not in module.vm_module.function_names:
        print(f"no function @{function} in {vmfb}", file=sys.stderr)
        return 2
    from npu_studio.core.run.dispatches.dispatch_server import load_array

    result = module[function](*[load_array(p) for p in inputs])
    results = result if isinstance(result, (tuple, list)) else [result]
    for i, r in enumerate(results):
        np.save(out / f"output{i}.npy", np.asarray(r.to_host() if hasattr(r, "to_host") else r))
    print(json.dumps({"events": events, "outputs": len(results)}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
