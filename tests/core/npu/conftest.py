import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from flowgen import flow_snapshot  # noqa: E402

from npu_studio.core.npu.target.target import RESOURCES, load_target, parse_target  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="session")
def example_flow() -> Path:
    return flow_snapshot(ROOT / "resources" / "examples" / "single_conv.onnx")


@pytest.fixture(scope="session")
def default_target():
    return load_target()


@pytest.fixture(scope="session")
def tiny_target():
    return load_target("tiny")


@pytest.fixture(scope="session")
def no_f32_target():
    text = (RESOURCES / "default.toml").read_text()
    text = text.replace('supported = ["f32", "f16", "bf16", "i8"]', 'supported = ["f16", "bf16", "i8"]')
    t = parse_target(text, "no_f32.toml")
    assert "f32" not in t.dtypes
    return t


@pytest.fixture(scope="session")
def tiny_f32_target():
    """The tiny target (64 KiB SRAM) with f32 enabled, so float models tile."""
    text = (RESOURCES / "tiny.toml").read_text()
    text = text.replace('supported = ["f16", "bf16", "i8"]', 'supported = ["f32", "f16", "bf16", "i8"]')
    t = parse_target(text, "tiny_f32.toml")
    assert "f32" in t.dtypes and t.sram_bytes == 64 * 1024
    return t
