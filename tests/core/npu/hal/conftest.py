"""The NPU plugin tests need a C compiler; without one they skip with a one-line reason."""

from __future__ import annotations

import pytest

from npu_studio.core.npu.hal.plugin_build import CompilerMissing, find_cc


@pytest.fixture(scope="session")
def cc() -> str:
    try:
        return find_cc()
    except CompilerMissing as exc:
        pytest.skip(f"no C compiler ({exc.reason})")
