"""What the assembly view shows, without Qt: a program emitted through its own backend.

`assembly_model(program)` asks the backend the program was planned for (its target names
it) to emit the program, and indexes the result for the links the view draws: the tag of
each line (its dispatch and task, its bytes in the binary) and the lines of each task and
each dispatch. A backend without an emitter gives a model with no text and the reason.
`AssemblyCache` keeps the models of the last few programs, by identity, so that a program
shown again (a cancelled compile brings the previous one back) is not emitted again.
Emitting runs in a worker of the app; everything here is plain data.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field

from ..backend import registry
from ..backend.api import Emitted, EmittedLine
from ..program.npu_ir import NpuProgram


@dataclass(frozen=True)
class AssemblyModel:
    backend: str
    emitted: Emitted | None  # None: the backend has no emitter (`reason` says so)
    reason: str = ""
    by_line: dict[int, EmittedLine] = field(default_factory=dict, compare=False)
    task_lines: dict[int, tuple[int, ...]] = field(default_factory=dict, compare=False)
    dispatch_lines: dict[int, tuple[int, ...]] = field(default_factory=dict, compare=False)

    @property
    def text(self) -> str:
        return self.emitted.assembly if self.emitted is not None else ""

    @property
    def instructions(self) -> int:
        return len(self.by_line)

    @property
    def binary_size(self) -> int:
        return len(self.emitted.binary) if self.emitted is not None else 0

    def tag_at(self, line: int) -> EmittedLine | None:
        """The dispatch and task of 1-based text line `line` (None: a line of the whole program)."""
        return self.by_line.get(line)

    def lines_of_task(self, task: int) -> tuple[int, ...]:
        return self.task_lines.get(task, ())

    def lines_of_dispatch(self, dispatch: int) -> tuple[int, ...]:
        return self.dispatch_lines.get(dispatch, ())

    def summary(self) -> str:
        if self.emitted is None:
            return self.reason
        return (f"{self.backend}: {self.instructions:,} tagged instructions, "
                f"{self.binary_size:,} bytes of binary")


def index_emitted(backend: str, emitted: Emitted) -> AssemblyModel:
    by_line: dict[int, EmittedLine] = {}
    tasks: dict[int, list[int]] = {}
    dispatches: dict[int, list[int]] = {}
    for tag in emitted.lines:
        by_line[tag.line] = tag
        dispatches.setdefault(tag.dispatch, []).append(tag.line)
        if tag.task is not None:
            tasks.setdefault(tag.task, []).append(tag.line)
    return AssemblyModel(backend, emitted, "", by_line,
                         {t: tuple(v) for t, v in tasks.items()}, {d: tuple(v) for d, v in dispatches.items()})


def assembly_model(program: NpuProgram) -> AssemblyModel:
    """`program` in its backend's assembly; BackendError (one line naming the backend) when the
    backend cannot be loaded or its emitter raises, StudioError when the program cannot be said."""
    backend = registry.backend_of(program.target)
    if backend.emit is None:
        return AssemblyModel(backend.name, None, f"The NPU backend {backend.name!r} has no emitter: "
                                                 "it shows no assembly.")
    return index_emitted(backend.name, backend.emit(program))


class AssemblyCache:
    """The models of the last `size` programs, each found by the program's identity."""

    def __init__(self, size: int = 4):
        self.size = size
        self._kept: OrderedDict[int, tuple[NpuProgram, AssemblyModel]] = OrderedDict()

    def get(self, program: NpuProgram) -> AssemblyModel | None:
        kept = self._kept.get(id(program))
        if kept is None or kept[0] is not program:  # another program at a reused address
            return None
        self._kept.move_to_end(id(program))
        return kept[1]

    def put(self, program: NpuProgram, model: AssemblyModel) -> None:
        self._kept[id(program)] = (program, model)  # the program is held: its id stays its own
        self._kept.move_to_end(id(program))
        while len(self._kept) > self.size:
            self._kept.popitem(last=False)

    def clear(self) -> None:
        self._kept.clear()
