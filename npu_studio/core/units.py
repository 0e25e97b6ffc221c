"""How sizes and counts are written for people: one formatter each."""

from __future__ import annotations


def format_bytes(n: int | float) -> str:
    """Binary units: `800 bytes`, `9.1 KiB`, `3.0 MiB`, `1.2 GiB`."""
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def format_flops(n: int | float) -> str:
    """Adaptive units, never `0.000` for a small dispatch: `512 FLOP`, `1.2 MFLOP`, `9.0 GFLOP`."""
    return f"{format_count(n)}FLOP"


def format_count(n: int | float) -> str:
    """Decimal prefix with a trailing space for the unit: `512 `, `7.7 G`."""
    for prefix in ("", "k", "M", "G", "T"):
        if abs(n) < 1000 or prefix == "T":
            return f"{n:.0f} " if prefix == "" else f"{n:.1f} {prefix}"
        n /= 1000
    raise AssertionError("unreachable")


def plural(n: int, noun: str, nouns: str | None = None) -> str:
    """`1 dispatch`, `2 dispatches`, `0 edges`: the count and its noun, in the number the count asks for."""
    if n == 1:
        return f"{n} {noun}"
    return f"{n:,} {nouns or (noun + 'es' if noun.endswith(('s', 'sh', 'ch', 'x')) else noun + 's')}"
