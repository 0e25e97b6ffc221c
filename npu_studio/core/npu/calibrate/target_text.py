"""New values written into a target's own TOML text, its comments and layout kept.

A key's line is rewritten in place (`bytes_per_cycle = 40  # comment` keeps its comment); a key
the text lacks goes under its table's header, or into a new table at the end.
"""

from __future__ import annotations

import re

from ..target.target import key_line, toml_value


def set_keys(text: str, values: dict[str, int | str]) -> str:
    lines = text.splitlines()
    for dotted, v in values.items():
        *tables, key = dotted.split(".")
        table = ".".join(tables)
        assign = re.compile(rf"^(\s*(?:\"{re.escape(key)}\"|{re.escape(key)})\s*=\s*)([^#]*?)(\s*(?:#.*)?)$")
        line = key_line("\n".join(lines), dotted)  # the key's line, else its table header's
        m = assign.match(lines[line - 1]) if line is not None else None
        if m:
            lines[line - 1] = m.group(1) + toml_value(v) + m.group(3)
        elif line is not None:
            lines.insert(line, f"{key} = {toml_value(v)}")
        elif not table:  # a top-level key goes before the first table
            first = next((i for i, ln in enumerate(lines) if re.match(r"^\s*\[", ln)), len(lines))
            lines.insert(first, f"{key} = {toml_value(v)}")
        else:
            lines += ["", f"[{table}]", f"{key} = {toml_value(v)}"]
    return "\n".join(lines) + "\n"
