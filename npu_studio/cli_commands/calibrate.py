"""npu-studio calibrate WORKSPACE --measured FILE [--keys k1,k2,...] [--out TARGET.toml] [--target FILE]

Fits target keys (DRAM bandwidth, DMA setup, MAC rate per input type, vector lanes, CPU launch)
to measured cycles with a bounded least-squares fit through the timing simulator
(docs/npu-calibrate.md), writes the fitted target as a user target and reports the
per-dispatch error before and after, worst dispatches first.
"""

from __future__ import annotations

from pathlib import Path

from ..core.errors import StudioError

WORST = 5  # dispatches listed by error


def add_parser(sub) -> None:
    p = sub.add_parser("calibrate", help="fit target keys to measured cycles; write the fitted target",
                       description="Fit target keys to measured cycles (CSV: dispatch or task id, cycles; the CSV "
                                   "of `simulate --csv` is accepted as it is) with a bounded least-squares fit "
                                   "through the timing simulator, save the fitted target as a user target and "
                                   "report the per-dispatch error before and after.")
    p.add_argument("source", type=Path, metavar="WORKSPACE", help="a workspace, model or model.npu.json")
    p.add_argument("--measured", type=Path, required=True, metavar="FILE", help="the measured cycles (CSV)")
    p.add_argument("--keys", default=None, metavar="k1,k2,...",
                   help="target keys to fit (default: those the program exercises): dram.bytes_per_cycle, "
                        "dma.setup_cycles, mac_array.macs_per_cycle.<type>, vector.lanes, cpu.launch_cycles, "
                        "cpu.ops_per_cycle")
    p.add_argument("--out", type=Path, default=None, metavar="TARGET.toml",
                   help="a name (the user target <name>.toml in the config folder) or a path to write the fitted "
                        "target to (default: the user target <target>-calibrated)")
    p.add_argument("--target", dest="npu_target", default=None, metavar="FILE",
                   help="the target to start from (default: the one the program was planned for)")
    p.set_defaults(func=run)


def _base_text(ws, program, target_arg, backend) -> tuple[str, Path]:
    """The TOML text of the starting target and the file it came from (read with the keys of the
    program's backend)."""
    from ..core.npu.backend import registry
    from ..core.npu.store.workspace_io import recorded_target
    from ..core.npu.target.target import TargetError, read_target_text, target_file
    from ..core.npu.target.target_store import bundled_targets

    if target_arg:
        path = target_file(target_arg)
    elif ws is not None and recorded_target(ws) is not None:
        path = recorded_target(ws).path
    elif program.target.source and Path(program.target.source).is_file():
        path = Path(program.target.source)
    else:
        path = None
        for candidate in [backend.default_target, *(d.path for d in bundled_targets())]:
            try:
                if registry.load_target(backend, candidate).name == program.target.name:
                    path = candidate
                    break
            except TargetError:
                continue
        if path is None:
            raise StudioError(None, f"no TOML text of target {program.target.name!r} to start from: give --target")
    return read_target_text(path), path


def _destination(out: Path | None, base_name: str) -> tuple[Path | None, str | None]:
    """(a path to write, or None) and (a user target name, or None)."""
    from ..core.npu.target.target_store import bundled_targets, user_target_path

    if out is not None and (out.parent != Path(".") or out.is_absolute()):
        return out, None
    if out is not None:
        name = out.stem if out.suffix == ".toml" else out.name
        if name in {d.name for d in bundled_targets()}:  # `--target NAME` finds the bundled one first
            raise StudioError(None, f"--out {out}: a bundled target is named {name!r}; choose another name")
        return None, name
    name, n = f"{base_name}-calibrated", 1
    while user_target_path(name).exists():
        n += 1
        name = f"{base_name}-calibrated-{n}"
    return None, name


def run(args) -> int:
    from ..core.npu.backend import registry
    from ..core.npu.calibrate.fit import check_determined, default_keys, fit
    from ..core.npu.calibrate.measured import check_ids, per_dispatch, read_measured, record
    from ..core.npu.calibrate.target_text import set_keys
    from ..core.npu.sim import simulate
    from ..core.npu.calibrate.measured import simulated_cycles
    from ..core.npu.target.target_store import is_bundled, save_edit, user_target_path
    from ..core.textio import check_output_file, write_text_atomic
    from .simulate import load_source

    measured = read_measured(args.measured)  # file:line errors before any work
    keys = [k.strip() for k in args.keys.split(",")] if args.keys is not None else None
    if keys is not None:
        from ..core.npu.calibrate.fit import check_keys
        check_keys(keys)
    program, target, ws = load_source(args.source, args.npu_target)
    check_ids(measured, program)
    backend = registry.backend_of(program.target)  # the workspace's (or program's) backend: its keys and costs

    def parse(text: str, path: Path):
        return registry.parse_target_for(backend, text, path)

    text, base_path = _base_text(ws, program, args.npu_target, backend)
    base = parse(text, base_path)
    path, name = _destination(args.out, base.name)
    if path is not None:
        check_output_file(path)
        if is_bundled(path):
            raise StudioError(path, "bundled targets are not overwritten")
    else:
        user_target_path(name)  # a bad name: one line, before the fit
    keys = keys or default_keys(program)
    if not keys:
        raise StudioError(args.measured, "nothing to fit: the program has no DMA, MAC, vector or CPU steps")
    check_determined(program, base, measured, keys)  # one line naming a key the measurements cannot fit
    result = fit(program, base, measured, keys)
    new_name = path.stem if path is not None else name
    fitted_text = set_keys(text, {"name": new_name, **dict(zip(result.keys, result.after))})
    if path is not None:
        parse(fitted_text, path)
        write_text_atomic(path, fitted_text)
        written = path
    else:
        written = save_edit(fitted_text, base_path, name=name, check=parse)
    if ws is not None:  # the app's schedule shows them beside the simulation
        record(ws.root, measured)

    before = per_dispatch(measured, simulated_cycles(simulate(program, base), measured.level), program)
    after = per_dispatch(measured, simulated_cycles(simulate(program, result.target), measured.level), program)
    print(f"fitted {len(keys)} keys to {len(measured.cycles)} measured {'dispatches' if measured.level == 'dispatch' else 'tasks'} "
          f"({result.simulations} simulations):")
    for k, b, a in zip(result.keys, result.before, result.after):
        print(f"  {k:<36} {b:>8} -> {a}")
    print(f"target {new_name}: {written}")
    for label, table in (("before", before), ("after", after)):
        print(_error_line(label, table))
    print("worst dispatches after the fit (before -> after, relative to measured):")
    for d in sorted(after, key=lambda d: -abs(_err(after[d])))[:WORST]:
        print(f"  Dispatch #{d}: measured {after[d][0]:.0f} cycles, simulated {before[d][1]} -> {after[d][1]} "
              f"({100 * _err(before[d]):+.2f}% -> {100 * _err(after[d]):+.2f}%)")
    return 0


def _err(pair: tuple[float, int]) -> float:
    from ..core.npu.calibrate.measured import relative_error

    return relative_error(*pair)


def _error_line(label: str, table: dict) -> str:
    errors = [abs(_err(v)) for v in table.values()]
    return (f"per-dispatch error {label}: mean {100 * sum(errors) / len(errors):.2f}%, "
            f"worst {100 * max(errors):.2f}% over {len(errors)} dispatches")
