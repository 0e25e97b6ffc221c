"""What one iree-compile run is asked to do: backend, start and end phase, extra flags.

`CompileOptions` is the one description the command builder (`compiler.build_command`),
the job (`compiler.CompileJob`) and the workspace (recorded in its manifest) share.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

from .phases import PHASES, phase_index

TARGETS = ("llvm-cpu", "vmvx")
DEFAULT_TARGET = "llvm-cpu"


def target_flags(target: str) -> list[str]:
    if target not in TARGETS:
        raise ValueError(f"unknown target {target!r}; expected one of {', '.join(TARGETS)}")
    flags = [
        "--iree-hal-target-device=local",
        f"--iree-hal-local-target-device-backends={target}",
    ]
    if target == "llvm-cpu":
        flags.append("--iree-llvmcpu-target-cpu=host")
    return flags


@dataclass(frozen=True)
class CompileOptions:
    target: str = DEFAULT_TARGET  # the IREE backend the module is built for
    from_phase: str = "start"  # the phase the input is a snapshot of (`--compile-from`)
    to_phase: str = "end"  # the last phase to run (`--compile-to`); "end" builds the module
    extra_flags: tuple[str, ...] = ()  # further iree-compile flags, as given
    compiler: str | None = None  # another iree-compile binary (a build variant's); None: the installed one

    def __post_init__(self) -> None:
        target_flags(self.target)  # ValueError naming the valid targets
        if phase_index(self.to_phase) <= phase_index(self.from_phase):  # ValueError naming the valid phases
            raise ValueError(f"nothing to compile from {self.from_phase} to {self.to_phase}")
        object.__setattr__(self, "extra_flags", tuple(self.extra_flags))

    @property
    def builds_module(self) -> bool:
        return self.to_phase == "end"

    def phases(self) -> tuple[str, ...]:
        """The snapshot phases this compile writes, in order."""
        first, last = phase_index(self.from_phase), phase_index(self.to_phase)
        return tuple(p for p in PHASES[first + 1 : last + 1] if p != "end")

    def flags(self) -> list[str]:
        """The iree-compile flags these options stand for (no input, output or dump flags)."""
        flags = target_flags(self.target)
        if self.from_phase != "start":
            # Without it, snapshots from stream..executable-targets compile "fine"
            # into a vmfb with no dispatches.
            flags.append(f"--compile-from={self.from_phase}")
        if not self.builds_module:
            flags.append(f"--compile-to={self.to_phase}")
        return flags

    def with_(self, **changes) -> "CompileOptions":
        return replace(self, **changes)

    def to_json(self) -> dict:
        data = asdict(self)
        data["extra_flags"] = list(self.extra_flags)
        return data

    @classmethod
    def from_json(cls, data: dict) -> "CompileOptions":
        return cls(target=data.get("target", DEFAULT_TARGET), from_phase=data.get("from_phase", "start"),
                   to_phase=data.get("to_phase", "end"), extra_flags=tuple(data.get("extra_flags", ())),
                   compiler=data.get("compiler"))
