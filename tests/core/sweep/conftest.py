import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "npu"))

from flowgen import flow_snapshot  # noqa: E402
from sweep_models import small_cnn  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="session")
def sweep_models() -> tuple[Path, Path]:
    """Flow snapshots of the bundled example and the small CNN."""
    return (flow_snapshot(ROOT / "resources" / "examples" / "single_conv.onnx"),
            flow_snapshot(small_cnn()))
