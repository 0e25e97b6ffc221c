"""The bundled generic NPU, as a backend (`backend.py`), registered in pyproject.toml's
`npu_studio.backends` entry points like any other; nothing else imports this package."""
