"""New values written into a target's own TOML text, its comments and layout kept.

A key's line is rewritten in place (`bytes_per_cycle = 40  # comment` keeps its comment); a key
the text lacks goes under its table's header, or into a new table at the end.
"""

from __future__ import annotations

import json
import re


def _value(v) -> str:
    return json.dumps(v) if isinstance(v, str) else repr(v)


def set_keys(text: str, values: dict[str, int | str]) -> str:
    lines = text.splitlines()
    for dotted, v in values.items():
        *tables, key = dotted.split(".")
        table = ".".join(tables)
        key_re = re.compile(rf"^(\s*(?:\"{re.escape(key)}\"|{re.escape(key)})\s*=\s*)([^#]*?)(\s*(?:#.*)?)$")
        current, header, found = "", None, False
        for no, line in enumerate(lines):
            m = re.match(r"^\s*\[\s*([^\]]+?)\s*\]", line)
            if m:
                current = m.group(1).strip()
                if current == table:
                    header = no
                continue
            km = key_re.match(line)
            if current == table and km:
                lines[no] = km.group(1) + _value(v) + km.group(3)
                found = True
                break
        if found:
            continue
        if header is not None:
            lines.insert(header + 1, f"{key} = {_value(v)}")
        elif not table:  # a top-level key goes before the first table
            first = next((i for i, ln in enumerate(lines) if re.match(r"^\s*\[", ln)), len(lines))
            lines.insert(first, f"{key} = {_value(v)}")
        else:
            lines += ["", f"[{table}]", f"{key} = {_value(v)}"]
    return "\n".join(lines) + "\n"
