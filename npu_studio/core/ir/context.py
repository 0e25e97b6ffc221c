"""The one way to make an MLIR context for parsing text: with MLIR's thread pool off.

`ir.Module.parse` of a broken module (a block without its terminator, a -1
in `sizes`, an empty affine map: one-line edits the Edit IR view invites)
can deadlock between the parsing thread and MLIR's worker threads, in native
code where no signal is acted on. With multithreading disabled the same
parse returns its error at once. Every parse of text that may come from a
user goes through a context made here.
"""

from __future__ import annotations


def mlir_context(*, allow_unregistered: bool = True):
    """A fresh `iree.compiler.ir.Context`, single-threaded."""
    from iree.compiler import ir

    ctx = ir.Context()
    ctx.enable_multithreading(False)
    ctx.allow_unregistered_dialects = allow_unregistered
    return ctx


def first_diagnostic(error) -> tuple[int | None, int | None, str]:
    """(line, column, message) of an `ir.MLIRError`'s first error; line and column None when unknown."""
    from iree.compiler import ir

    for d in error.error_diagnostics:
        try:
            loc = ir.FileLineColLoc(d.location)
            line, col = loc.start_line or None, loc.start_col or None
        except (TypeError, ValueError):
            line = col = None
        return line, col, d.message
    lines = [ln for ln in str(error).splitlines() if ln.strip()]
    return None, None, lines[-1].strip() if lines else "cannot parse"
