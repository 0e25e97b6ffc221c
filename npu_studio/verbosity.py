"""`npu-studio -v` / `--verbose`: our log records on stderr, one line each.

`-v` shows every tool we start, with its full command line (INFO:
`npu-studio: INFO: Invoking /path/iree-compile model.mlir ...`); `-vv` also how
each one ended and after how long (DEBUG). Without the flag nothing is added to
a command's output. Shared by the command line (cli.py) and the app (app.py).
"""

from __future__ import annotations

import contextlib
import logging
import re
import sys

PACKAGE_LOGGER = "npu_studio"  # every module logs under it: logging.getLogger(__name__)
LINE_FORMAT = "npu-studio: %(levelname)s: %(message)s"
_FLAG = re.compile(r"-v+|--verbose")


def add_verbose_option(parser) -> None:
    parser.add_argument("-v", "--verbose", action="count", default=0,
                        help="print each tool run (iree-compile, iree-run-module, the C compiler ...) "
                             "with its command line on stderr; -vv also its exit code and time")


def leading_verbosity(argv: list[str]) -> tuple[int, list[str]]:
    """The `-v` flags before the command name, counted, and the arguments after them."""
    count = 0
    for i, arg in enumerate(argv):
        if not _FLAG.fullmatch(arg):
            return count, argv[i:]
        count += 1 if arg == "--verbose" else len(arg) - 1
    return count, []


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever `sys.stderr` is when a record comes (a test may have swapped it since)."""

    def __init__(self):
        logging.Handler.__init__(self)

    @property
    def stream(self):
        return sys.stderr


def log_to_stderr(verbosity: int) -> logging.Handler | None:
    """Attach a stderr handler for `verbosity` (1: INFO, 2 or more: DEBUG); None for 0."""
    if verbosity <= 0:
        return None
    handler = _StderrHandler()
    handler.setFormatter(logging.Formatter(LINE_FORMAT))
    logger = logging.getLogger(PACKAGE_LOGGER)
    level = logging.INFO if verbosity == 1 else logging.DEBUG
    if logger.level == logging.NOTSET or logger.level > level:
        logger.setLevel(level)
    logger.addHandler(handler)
    return handler


@contextlib.contextmanager
def stderr_logging(verbosity: int):
    """`log_to_stderr` for the time of one command, then as before (commands may run in-process, in tests)."""
    logger = logging.getLogger(PACKAGE_LOGGER)
    level = logger.level
    handler = log_to_stderr(verbosity)
    try:
        yield handler
    finally:
        if handler is not None:
            logger.removeHandler(handler)
            logger.setLevel(level)
