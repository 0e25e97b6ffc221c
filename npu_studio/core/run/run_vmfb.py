"""Child-process entry: python -m npu_studio.core.run.run_vmfb VMFB FUNCTION OUT_DIR [INPUT.npy ...] [--parameters=IRPA]

Writes OUT_DIR/output<i>.npy and prints the number of outputs. With
`--parameters`, the module's `#stream.parameter.named<"model"::...>` weights
are read from that archive (mapped, not loaded).
"""

import os
import sys
from pathlib import Path

import numpy as np


def parse_args(argv: list[str]) -> tuple[str, str, str, list[str], str | None]:
    """(vmfb, function, out_dir, inputs, parameters) from the command line above."""
    params = [a.split("=", 1)[1] for a in argv if a.startswith("--parameters=")]
    vmfb, function, out_dir, *inputs = [a for a in argv if not a.startswith("--parameters=")]
    return vmfb, function, out_dir, inputs, params[0] if params else None


def load(vmfb: str, parameters: str | None):
    """The loaded module (it keeps its context); IREE runs the module's initializers here."""
    import iree.runtime as rt

    config = rt.Config("local-task")
    ctx = rt.SystemContext(config=config)
    if parameters:
        from npu_studio.core.compile.params import ParameterArchive

        archive = ParameterArchive(parameters)
        ctx.add_vm_module(rt.create_io_parameters_module(config.vm_instance, archive.provider()))
    try:
        module = rt.VmModule.mmap(config.vm_instance, vmfb)
    except OSError:  # IREE maps the file read-write: a read-only workspace is read into memory instead
        module = rt.VmModule.copy_buffer(config.vm_instance, Path(vmfb).read_bytes())
    ctx.add_vm_module(module)
    return ctx.modules.module


def call(module, vmfb: str, function: str, out_dir: str, inputs: list[str]) -> int:
    """Calls `function` on the `.npy` inputs, saves the outputs and prints their number; the exit code."""
    if function not in module.vm_module.function_names:
        print(f"no function @{function} in {vmfb}", file=sys.stderr)
        return 2
    result = module[function](*[np.load(p) for p in inputs])
    results = result if isinstance(result, (tuple, list)) else [result]
    for i, r in enumerate(results):
        np.save(Path(out_dir) / f"output{i}.npy", np.asarray(r.to_host() if hasattr(r, "to_host") else r))
    print(len(results))
    return 0


def main(argv: list[str]) -> int:
    vmfb, function, out_dir, inputs, parameters = parse_args(argv)
    return call(load(vmfb, parameters), vmfb, function, out_dir, inputs)


if __name__ == "__main__":
    code = main(sys.argv[1:])
    sys.stdout.flush()
    sys.stderr.flush()
    # The outputs are on disk: skip the interpreter's teardown of the runtime, whose device
    # threads were seen to abort it now and then ("terminate called without an active exception").
    os._exit(code)
