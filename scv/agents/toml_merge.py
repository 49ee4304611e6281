"""Merging two TOML documents by top-level key at the text level (the standard library reads TOML
but cannot write it, and no writer may be added): the user's units win, units only SCV's copy has
are kept, and the merged text is accepted only when it parses to exactly the dict merge
`{**scv, **user}`. A "unit" is one root-level statement or one table block (a `[a.b]` / `[[a.b]]`
header and the statements under it), each with the comment lines just above it."""

import math
import tomllib
from dataclasses import dataclass, field


class MergeRefused(Exception):
    """The text-level merge did not reproduce the dict merge; nothing may be written."""


@dataclass
class Unit:
    key: str | None           # the top-level key it defines; None for comment-only text
    header: bool              # a table block rather than a root-level statement
    lines: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        joined = "".join(self.lines)
        return joined if joined.endswith("\n") else joined + "\n"


class _Scanner:
    """Tracks, across lines, whether a line starts at a statement boundary: outside multi-line
    strings and outside the brackets of a multi-line array or inline table. Lines inside those can
    look like headers (`[fake]`) and must not be taken for one."""

    def __init__(self):
        self.multiline: str | None = None      # '"""' or "'''" while inside one
        self.depth = 0

    @property
    def at_boundary(self) -> bool:
        return self.multiline is None and self.depth == 0

    def feed(self, line: str) -> None:
        i, n = 0, len(line)
        while i < n:
            ch = line[i]
            if self.multiline is not None:
                quote = self.multiline[0]
                if quote == '"' and ch == "\\":
                    i += 2
                    continue
                if ch == quote:
                    run = _run(line, i, quote)
                    if run >= 3:               # the last three of a run of 3-5 close it
                        self.multiline = None
                    i += run
                    continue
                i += 1
                continue
            if ch == "#":
                return
            if ch in "\"'":
                run = _run(line, i, ch)
                if run >= 3:
                    self.multiline = ch * 3
                    i += 3
                elif run == 2:                 # an empty string
                    i += 2
                else:
                    i = _end_of_string(line, i + 1, ch)
                continue
            if ch in "[{":
                self.depth += 1
            elif ch in "]}":
                self.depth -= 1
            i += 1


def _run(line: str, i: int, ch: str) -> int:
    j = i
    while j < len(line) and line[j] == ch:
        j += 1
    return j - i


def _end_of_string(line: str, i: int, quote: str) -> int:
    while i < len(line):
        if quote == '"' and line[i] == "\\":
            i += 2
            continue
        if line[i] == quote:
            return i + 1
        i += 1
    return i


def _only_key(text: str) -> str:
    """The one top-level key a header line or root statement defines."""
    try:
        parsed = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise MergeRefused(f"a statement could not be read on its own ({err})") from None
    if len(parsed) != 1:
        raise MergeRefused("a statement did not define exactly one top-level key")
    return next(iter(parsed))


def _lines(text: str) -> list[str]:
    """Lines with their ends; only "\n" ends a TOML line (str.splitlines would also split at
    characters such as U+0085 or U+2028, which may sit inside a string)."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    return lines + [parts[-1]] if parts[-1] else lines


def split_units(text: str) -> list[Unit]:
    """`text` (already known to be valid TOML) as units in their order."""
    scanner = _Scanner()
    units: list[Unit] = []
    pending: list[str] = []          # comment and blank lines, for the next statement or header
    current: Unit | None = None
    for line in _lines(text):
        if not scanner.at_boundary:
            current.lines.append(line)
            scanner.feed(line)
            continue
        stripped = line.strip(" \t\r\n")
        if not stripped or stripped.startswith("#"):
            pending.append(line)
            continue
        if stripped.startswith("["):
            # a header line is not fed to the scanner: its brackets and quotes are the key's
            current = Unit(_only_key(line), True, [*pending, line])
            units.append(current)
            pending = []
            continue
        if current is not None and current.header:
            current.lines.extend([*pending, line])
        else:
            current = Unit(None, False, [*pending, line])
            units.append(current)
        pending = []
        scanner.feed(line)
    for unit in units:
        if unit.key is None:         # a root statement spanning lines: known once it ends
            unit.key = _only_key("".join(unit.lines))
    if pending:
        if units:
            units[-1].lines.extend(pending)
        else:
            units.append(Unit(None, False, pending))
    return units


def same(a: object, b: object) -> bool:
    """Equality of parsed TOML values, with matching types (1 is not 1.0) and nan equal to nan."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return a == b


def merge(user_text: str, scv_text: str | None) -> tuple[str, dict, list[str]]:
    """The merged text, what it parses to, and the top-level keys kept from SCV's copy. Both
    inputs must be valid TOML; raises MergeRefused (or tomllib.TOMLDecodeError) otherwise."""
    user = tomllib.loads(user_text)
    if scv_text is None:
        return user_text, user, []
    scv = tomllib.loads(scv_text)
    kept = [key for key in scv if key not in user]
    user_units = split_units(user_text)
    scv_units = [u for u in split_units(scv_text) if u.key in kept]
    ordered = ([u for u in user_units if not u.header] + [u for u in scv_units if not u.header]
               + [u for u in user_units if u.header] + [u for u in scv_units if u.header])
    merged_text = "".join(unit.text for unit in ordered)
    try:
        merged = tomllib.loads(merged_text)
    except tomllib.TOMLDecodeError as err:
        raise MergeRefused(f"the merged text is not valid TOML ({err})") from None
    if not same(merged, {**scv, **user}):
        raise MergeRefused("the merged text does not read as your tables plus SCV's own")
    return merged_text, merged, kept
