import pytest

from npu_studio.core.compile import toolchain
from npu_studio.core.compile.phases import PHASES, SNAPSHOT_PHASES, phases_after


def test_phase_list_is_the_compilers_own():
    assert list(PHASES) == toolchain.compile_to_phase_names()


def test_twelve_snapshot_phases_between_start_and_end():
    assert len(SNAPSHOT_PHASES) == 12
    assert SNAPSHOT_PHASES[0] == "input" and SNAPSHOT_PHASES[-1] == "vm"


def test_phases_after():
    assert phases_after("flow")[0] == "stream"
    assert phases_after("start") == SNAPSHOT_PHASES
    assert phases_after("vm") == ()
    with pytest.raises(ValueError, match="unknown phase 'flwo'"):
        phases_after("flwo")


def test_compiler_version_names_iree():
    assert "compiler version" in toolchain.compiler_version()
