"""Build the NPU executable plugin from its C source, once per source, into the user cache.

The plugin lives at <cache>/npu-studio/plugins/<hash>/npu_plugin.so, where
<hash> covers the C sources, the opcode tables generated from the instruction
set (isa_header) and the compiler flags: an edited source builds
a new plugin, an unchanged one is reused. `sanitize=True` builds it with
AddressSanitizer and UndefinedBehaviorSanitizer (tests and `make fuzz`: a
process that loads it needs the sanitizer runtime, e.g. an executable
built with the same flags). The build goes to a temporary
name and is renamed into place, so a concurrent or interrupted build never
leaves a half-written library where another process loads it.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from ... import processes
from ...processes import CC_ENV, CompilerMissing, find_cc  # noqa: F401 (this module's names before)
from ...errors import StudioError
from ...paths import cache_dir
from . import isa_header

SOURCE_DIR = Path(__file__).parent / "plugin_src"
SOURCES = ("npu_plugin.c", "npu_exec.c", "npu_exec_body.c", "npu_isa_decode.c", "npu_exec_section.c",
           "npu_exec_verify.c")
HEADERS = ("npu_plugin_abi.h", "npu_exec.h", "npu_isa.h")
CFLAGS = ("-O2", "-std=c11", "-shared", "-fPIC", "-fvisibility=hidden", "-pthread", "-Wall")
# Every report stops the process (no recovery), so a test sees each one as a failure.
SANITIZE_FLAGS = ("-O1", "-g", "-fno-omit-frame-pointer", "-fsanitize=address,undefined", "-fno-sanitize-recover=all")
LIBRARY = "npu_plugin.so"


def source_files() -> list[Path]:
    return [SOURCE_DIR / n for n in (*SOURCES, *HEADERS) if (SOURCE_DIR / n).is_file()]


def cflags(sanitize: bool = False) -> tuple[str, ...]:
    return (*CFLAGS, *SANITIZE_FLAGS) if sanitize else CFLAGS


def source_hash(sanitize: bool = False) -> str:
    h = hashlib.sha256()
    for path in source_files():
        h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    h.update(isa_header.text().encode() + b"\0")  # the generated opcode tables
    h.update(" ".join(cflags(sanitize)).encode())
    return h.hexdigest()[:16]


def cache_root() -> Path:
    return cache_dir() / "plugins"


def plugin_path(*, sanitize: bool = False) -> Path:
    """The built plugin for the current sources (built now if missing)."""
    dest = cache_root() / source_hash(sanitize) / LIBRARY
    if dest.is_file():
        return dest
    build(dest, sanitize=sanitize)
    return dest


def build(dest: Path, *, sanitize: bool = False) -> Path:
    cc = find_cc()
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".build-", suffix=".so", dir=dest.parent)
    os.close(fd)
    sources = [str(SOURCE_DIR / n) for n in SOURCES if (SOURCE_DIR / n).is_file()]
    generated = Path(tempfile.mkdtemp(prefix=".include-", dir=dest.parent))
    (generated / isa_header.HEADER).write_text(isa_header.text(), encoding="utf-8")
    cmd = [cc, *cflags(sanitize), "-I", str(SOURCE_DIR), "-I", str(generated), "-o", tmp, *sources, "-lm"]
    try:
        proc = processes.run_child(cmd, timeout=300)
    except subprocess.TimeoutExpired:
        Path(tmp).unlink(missing_ok=True)
        raise StudioError(SOURCE_DIR, "the C compiler did not finish within 300 s") from None
    finally:
        shutil.rmtree(generated, ignore_errors=True)
    if proc.returncode != 0:
        Path(tmp).unlink(missing_ok=True)
        errors = [ln for ln in proc.stderr.splitlines() if "error" in ln] or proc.stderr.splitlines() or ["?"]
        raise StudioError(SOURCE_DIR, f"building the NPU plugin failed: {errors[0].strip()}")
    os.replace(tmp, dest)
    return dest
