"""Read text files as bytes and decode them with an error that names the file and byte offset."""

from __future__ import annotations

import dataclasses
import functools
import gc
import os
import stat
import types
import typing
from pathlib import Path
from typing import Any

from .errors import BadFile, os_error


def decode(data: bytes, path: str | Path) -> str:
    """UTF-8 text of `data`; BadFile with line, column and byte offset of the first bad byte."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        col = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise BadFile(path, f"not UTF-8 text: byte 0x{data[exc.start]:02x} at byte offset {exc.start} "
                            "cannot be decoded", line=line, col=col) from None


NOT_REGULAR = "is not a regular file (a FIFO, a device or a socket); expected a file"


def open_regular(path: str | Path, max_bytes: int | None = None) -> tuple[int, int]:
    """(fd, size) of the regular file `path`, opened to read; BadFile naming it otherwise: missing,
    a folder, a FIFO, a device or a socket (refused without waiting: O_NONBLOCK makes opening a FIFO
    return at once), or larger than `max_bytes`. The caller closes the fd."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except IsADirectoryError:
        raise BadFile(path, "is a folder, not a file") from None
    except ValueError:
        raise BadFile(path, "cannot read: a path cannot hold a NUL byte") from None
    except OSError as exc:
        raise os_error(path, OSError(exc.errno, exc.strerror), "cannot read") from None
    st = os.fstat(fd)
    why = ("is a folder, not a file" if stat.S_ISDIR(st.st_mode) else NOT_REGULAR if not stat.S_ISREG(st.st_mode)
           else f"is larger than {max_bytes:,} bytes ({st.st_size:,}); not a file of this kind"
           if max_bytes is not None and st.st_size > max_bytes else None)
    if why is not None:
        os.close(fd)
        raise BadFile(path, why)
    return fd, st.st_size


def read_bytes(path: str | Path, max_bytes: int | None = None) -> bytes:
    """The bytes of the regular file `path` (at most `max_bytes`); BadFile naming it for anything else
    (see `open_regular`): the one reader of the files users give and workspaces hold."""
    fd, _ = open_regular(path, max_bytes)
    try:
        with open(fd, "rb") as f:
            data = f.read() if max_bytes is None else f.read(max_bytes + 1)  # +1: a file that grew meanwhile
    except OSError as exc:
        raise os_error(path, OSError(exc.errno, exc.strerror), "cannot read") from None
    if max_bytes is not None and len(data) > max_bytes:
        raise BadFile(path, f"is larger than {max_bytes:,} bytes; not a file of this kind")
    return data


def check_regular_file(path: str | Path) -> Path:
    """`path` if it is a regular file (or a link to one); else BadFile: no such file, a folder, or
    not a regular file (a FIFO or a device: never "no such file")."""
    path = Path(path)
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise BadFile(path, "no such file") from None
    except ValueError:
        raise BadFile(path, "cannot read: a path cannot hold a NUL byte") from None
    except OSError as exc:
        raise os_error(path, OSError(exc.errno, exc.strerror), "cannot read") from None
    if stat.S_ISDIR(mode):
        raise BadFile(path, "is a folder, not a file")
    if not stat.S_ISREG(mode):
        raise BadFile(path, NOT_REGULAR)
    return path


def read_text(path: str | Path, max_bytes: int | None = None) -> str:
    """The UTF-8 text of `path` (a regular file, at most `max_bytes`); every failure is a BadFile naming it."""
    return decode(read_bytes(path, max_bytes), path)


def write_text_atomic(path: str | Path, text: str) -> None:
    """Write `text` as UTF-8 so that readers see the old or the new text, never half (write_bytes_atomic)."""
    write_bytes_atomic(path, text.encode("utf-8"))


def write_bytes_atomic(path: str | Path, data: bytes) -> None:
    """Write `data` to a temporary file beside `path`, fsync it, then rename it over `path`.

    A crash leaves the old or the new content, never half. When the write
    fails, the old file stays as it was and no temporary is left; the error
    is a BadFile naming `path`. The folder must exist.
    """
    path = Path(path)
    _refuse_special(path)
    # Same folder: os.replace is atomic only within one file system. A random part: two threads
    # (or a process that reuses a dead one's pid) never share a temporary.
    tmp = path.with_name(f".{path.name}.{os.getpid()}-{os.urandom(4).hex()}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)  # umask applies, as open()
        with open(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:  # the folder itself is gone or unreadable: nothing of ours is left in it
            pass
        if isinstance(exc, OSError):  # named after `path`, never after the temporary
            raise os_error(path, OSError(exc.errno, exc.strerror), "cannot write") from None
        raise


def _refuse_special(path: Path) -> None:
    """A FIFO, device or socket is never replaced by a file (`/dev/full` as root would be) nor opened."""
    try:
        mode = os.lstat(path).st_mode
    except (OSError, ValueError):
        return  # missing (the usual case), or the write names the problem itself
    if not (stat.S_ISREG(mode) or stat.S_ISLNK(mode) or stat.S_ISDIR(mode)):
        raise BadFile(path, "is not a regular file (a FIFO, a device or a socket); refusing to write it")


def write_output(path: str | Path, data: str | bytes) -> Path:
    """Write an output the user named (-o, --json, --csv, ...): atomically, at the file a link names
    (the user's link stays), never into or over a FIFO or a device; BadFile naming `path` on failure."""
    path = Path(path)
    target = Path(os.path.realpath(path)) if path.is_symlink() else path
    _refuse_special(target)
    write_bytes_atomic(target, data.encode("utf-8") if isinstance(data, str) else data)
    return path


def check_output_file(path: str | Path) -> Path:
    """Refuse an output path that cannot be written before any work is done."""
    path = Path(path)
    if path.is_dir():
        raise BadFile(path, "is a folder; expected a file name to write")
    if path.exists() and not path.is_file():
        raise BadFile(path, "is not a regular file (a FIFO, a device or a socket); refusing to write it")
    if not path.parent.is_dir():
        raise BadFile(path, f"folder {path.parent} does not exist")
    if not os.access(path.parent, os.W_OK):
        raise BadFile(path, f"folder {path.parent} is not writable")
    return path


def check_output_dir(path: str | Path) -> Path:
    """A folder outputs go into: created if missing, refused if it is a file or not writable."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise BadFile(path, "is a file; expected a folder for the outputs")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise os_error(path, exc, "cannot create folder") from None
    if not os.access(path, os.W_OK):
        raise BadFile(path, "folder is not writable")
    return path


# Integers in the JSON files we read: exact in a float64 and far from int64's ends, so sums and
# products of a few of them stay inside what numpy's int64 holds.
JSON_INT_LIMIT = 1 << 53


def without_gc(fn):
    """Run `fn` with the cycle collector paused: reading a large file builds millions of small
    containers, none of them cyclic, and the collector would only rescan them (20% of a read)."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        was_on = gc.isenabled()
        gc.disable()
        try:
            return fn(*args, **kwargs)
        finally:
            if was_on:
                gc.enable()

    return wrapper


class _Refused(ValueError):
    pass


_DIGITS_AS_NINES = bytes.maketrans(b"012345678", b"999999999")


def _has_16_digits(data: bytes) -> bool:
    """Whether `data` has a run of 16 ASCII digits anywhere (a translate and a find: about 7 times
    faster than the regular expression on a large file)."""
    return b"9" * 16 in data.translate(_DIGITS_AS_NINES)


def _bounded_int(digits: str) -> int:
    if len(digits.lstrip("-")) > 16 or abs(value := int(digits)) > JSON_INT_LIMIT:
        raise _Refused(f"the integer {digits[:24]}{'...' if len(digits) > 24 else ''} is out of range "
                       f"(at most {JSON_INT_LIMIT:,} in size)")
    return value


def _finite_float(text: str) -> float:
    value = float(text)
    if value != value or value in (float("inf"), float("-inf")):
        raise _Refused(f"the number {text[:24]} is out of range")
    return value


def _no_constant(name: str):
    raise _Refused(f"{name} is not a number JSON allows")


def parse_json(data: bytes | str, path: str | Path, what: str = "JSON") -> Any:
    """The JSON value of a file a user may have edited; BadFile naming `path` for anything else:
    bytes that are not UTF-8, bad syntax (with line and column), NaN or Infinity, integers past
    JSON_INT_LIMIT, nesting deeper than the parser goes."""
    import json

    text = decode(data, path) if isinstance(data, bytes) else data
    raw = data if isinstance(data, bytes) else text.encode("utf-8", "surrogatepass")
    # Without a run of 16 digits anywhere, every integer is under 10**15 and in range: checked in
    # bulk by one scan, instead of a Python call per integer (millions in a large NPU program).
    parse_int = _bounded_int if _has_16_digits(raw) else None
    try:
        return json.loads(text, parse_int=parse_int, parse_float=_finite_float, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        raise BadFile(path, f"not {what}: {exc.msg}", line=exc.lineno, col=exc.colno) from None
    except _Refused as exc:
        raise BadFile(path, f"not {what}: {exc}") from None
    except RecursionError:
        raise BadFile(path, f"not {what}: nested too deeply") from None


class _Mismatch(ValueError):
    """A value of the wrong type or size; `path` grows (innermost first) as it propagates out."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason, self.path = reason, []


def typed(hint, value, where: str, int_limit: int = JSON_INT_LIMIT):
    """`value` (from JSON) as the type `hint` names, checked all the way down; ValueError naming
    the place (`tasks[3].steps[0].bytes: expected int, got str`).

    Knows int, float, str, bool, dict, tuple[X, ...], tuple[X, Y], X | None and dataclasses (an
    object of their fields; fields with defaults may be missing). Integers are bounded by
    `int_limit` in size.
    """
    try:
        return _checker(hint, int_limit)(value)
    except _Mismatch as exc:
        place = where + "".join(reversed(exc.path))
        raise ValueError(f"{place}: {exc.reason}") from None


@functools.lru_cache(maxsize=None)
def _checker(hint, int_limit: int):
    """A function checking and converting one value of type `hint` (made once per type)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        (inner,) = [a for a in args if a is not type(None)]
        check = _checker(inner, int_limit)
        return lambda v: None if v is None else check(v)
    if hint is int:
        def check_int(v):
            if type(v) is not int:
                raise _Mismatch(f"expected an integer, got {_kind(v)}")
            if not -int_limit <= v <= int_limit:
                raise _Mismatch(f"{v:,} is out of range (at most {int_limit:,} in size)")
            return v
        return check_int
    if hint in (bool, str, dict) or origin is dict:
        want = dict if origin is dict else hint
        def check_plain(v):
            if type(v) is not want:
                raise _Mismatch(f"expected {want.__name__}, got {_kind(v)}")
            return v
        return check_plain
    if hint is float:
        def check_float(v):
            if type(v) not in (int, float):
                raise _Mismatch(f"expected a number, got {_kind(v)}")
            return float(v)
        return check_float
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        return _list_checker(args[0], int_limit)
    if origin is tuple:
        items = [_checker(a, int_limit) for a in args]
        def check_fixed(v):
            if type(v) is not list or len(v) != len(items):
                raise _Mismatch(f"expected a list of {len(items)}, got {_kind(v)}")
            return tuple(_at(f"[{i}]", c, x) for i, (c, x) in enumerate(zip(items, v)))
        return check_fixed
    if dataclasses.is_dataclass(hint):
        return _dataclass_checker(hint, int_limit)
    raise TypeError(f"typed() does not know {hint!r}")


def _list_checker(item, int_limit: int):
    if item is int:  # the common case (shapes, offsets, dependencies): checked in bulk
        def check_ints(v):
            if type(v) is not list:
                raise _Mismatch(f"expected a list, got {_kind(v)}")
            if all(type(x) is int for x in v) and (not v or (-int_limit <= min(v) and max(v) <= int_limit)):
                return tuple(v)
            return tuple(_at(f"[{i}]", _checker(int, int_limit), x) for i, x in enumerate(v))
        return check_ints
    check = _checker(item, int_limit)
    def check_list(v):
        if type(v) is not list:
            raise _Mismatch(f"expected a list, got {_kind(v)}")
        try:
            return tuple(map(check, v))
        except _Mismatch:  # find which one, for the message
            for i, x in enumerate(v):
                _at(f"[{i}]", check, x)
            raise
    return check_list


def _dataclass_checker(cls, int_limit: int):
    fast, slow = _fast_checker(cls, int_limit), _slow_dataclass_checker(cls, int_limit)

    def check_object(v):
        try:
            return fast(v)
        except Exception:  # noqa: BLE001 - anything unusual: the field-by-field check finds and names it
            return slow(v)
    return check_object


class _Slow(Exception):
    """Raised by a fast checker for anything it does not accept as it is."""


@functools.cache
def _fast_checker(cls, int_limit: int):
    """One generated function checking and building a well-formed `cls` object, no call per field:
    integers, strings, flags and lists of them are checked inline, lists of integers in bulk
    (types through one set, bounds through min and max). It accepts only what the field-by-field
    checker accepts, with the same result, and raises for anything else, which is then checked
    the slow way for its message (the way dataclasses generates __init__)."""
    hints = typing.get_type_hints(cls)
    fields = [f for f in dataclasses.fields(cls) if f.init]
    env = {"_cls": cls, "_L": int_limit, "_Slow": _Slow, "_INTS": frozenset({int}), "_STRS": frozenset({str})}
    body = [f"if type(v) is not dict or len(v) != {len(fields)}: raise _Slow"]
    args = []
    for i, f in enumerate(fields):
        body.append(f"x{i} = v[{f.name!r}]")
        body += _inline_check(hints[f.name], f"x{i}", env, int_limit)
        args.append(f"{f.name}=x{i}" if f.kw_only else f"x{i}")
    if _plain_init(cls):  # the generated __init__ would only set the fields one call each
        env["_new"] = object.__new__
        items = ", ".join(f"{f.name!r}: x{i}" for i, f in enumerate(fields))
        body += ["o = _new(_cls)", f"o.__dict__.update({{{items}}})"]
        result = "o"
    else:
        result = f"_cls({', '.join(args)})"
    source = "def fast(v):\n" + "".join(f"    {line}\n" for line in body) + f"    return {result}\n"
    exec(source, env)  # noqa: S102 - code built above from the dataclass's own field types
    return env["fast"]


def _plain_init(cls) -> bool:
    """Whether `cls`'s __init__ is dataclasses' own for all its fields, doing nothing else (dataclasses
    builds it with exec, so its code comes from "<string>"; a hand-written one would not)."""
    code = getattr(cls.__init__, "__code__", None)
    return (cls.__dataclass_params__.init and not hasattr(cls, "__post_init__") and not hasattr(cls, "__slots__")
            and all(f.init for f in dataclasses.fields(cls)) and code is not None and code.co_filename == "<string>")


def _inline_check(hint, x: str, env: dict, int_limit: int) -> list[str]:
    """Lines that check the value in variable `x` (and convert it in place) as _checker(hint) does."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is int:
        return [f"if type({x}) is not int or not -_L <= {x} <= _L: raise _Slow"]
    if hint in (bool, str, dict) or origin is dict:
        return [f"if type({x}) is not {'dict' if origin is dict else hint.__name__}: raise _Slow"]
    if hint is float:
        return [f"if type({x}) is not float and type({x}) is not int: raise _Slow", f"{x} = float({x})"]
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis and args[0] in (int, str):
        kinds = "_INTS" if args[0] is int else "_STRS"
        lines = [f"if type({x}) is not list: raise _Slow",
                 f"if {x} and not {{*map(type, {x})}} <= {kinds}: raise _Slow"]
        if args[0] is int:
            lines.append(f"if {x} and (min({x}) < -_L or max({x}) > _L): raise _Slow")
        return [*lines, f"{x} = tuple({x})"]
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis and dataclasses.is_dataclass(args[0]):
        env[f"_each_{x}"] = _fast_checker(args[0], int_limit)
        return [f"if type({x}) is not list: raise _Slow", f"{x} = tuple(map(_each_{x}, {x}))"]
    env[f"_check_{x}"] = _checker(hint, int_limit)  # the rest (rarer shapes) through the general checker
    return [f"{x} = _check_{x}({x})"]


def _slow_dataclass_checker(cls, int_limit: int):
    hints = typing.get_type_hints(cls)
    fields = [f for f in dataclasses.fields(cls) if f.init]
    checks = {f.name: _checker(hints[f.name], int_limit) for f in fields}
    required = {f.name for f in fields
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING}

    def check_object(v):
        if type(v) is not dict:
            raise _Mismatch(f"expected an object, got {_kind(v)}")
        if not required <= v.keys():
            raise _Mismatch(f"missing key {sorted(required - v.keys())[0]!r}")
        try:
            return cls(**{name: checks[name](x) for name, x in v.items()})
        except KeyError:
            pass  # an unknown key, named below
        except _Mismatch as exc:
            for name, x in v.items():  # which field, for the message
                try:
                    checks[name](x)
                except _Mismatch:
                    exc.path.append(f".{name}")
                    raise exc from None
            raise
        unknown = next(str(name) for name in v if name not in checks)
        raise _Mismatch(f"unknown key {unknown[:40]!r}")
    return check_object


def _at(step: str, check, value):
    try:
        return check(value)
    except _Mismatch as exc:
        exc.path.append(step)
        raise


def _kind(value) -> str:
    return "null" if value is None else type(value).__name__
