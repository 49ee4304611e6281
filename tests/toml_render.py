"""A small test-only TOML renderer: random dicts written in many styles (headers, subtables, arrays
of tables, dotted keys, inline tables, multi-line arrays and strings whose lines look like headers,
quoted keys with dots and brackets), so the text-level merge of scv/agents/toml_merge.py meets the
shapes real files have. Rendering is checked by parsing it back."""

import math
import random
import re

from hypothesis import strategies as st

BARE = re.compile(r"^[A-Za-z0-9_-]+$")
KEYS = st.sampled_from(["a", "b", "models", "marketplace", "default", "x-y", "a.b", "x]y", "[h]", 'q"t', "#c",
                        "sp ace", "'s'", "é"])
TRICKY = st.sampled_from(["[models]\nx = 1", '"""', "'''", "a\\b", "#not a comment", "[[t]]", "line\n[marketplace]",
                          '""', "x\"\"\"y", "tab\there", "\n", "ends with quote\"", "'", "nel\x85[x]", "ls\u2028[y]"])
STRINGS = TRICKY | st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
SCALARS = (st.integers(-2**63, 2**63 - 1) | st.booleans() | st.floats() | STRINGS)
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=3),
                      max_leaves=12)
DOCUMENTS = st.dictionaries(KEYS, VALUES, max_size=5)


def basic(text: str) -> str:
    """A one-line basic string: backslash, quote and control characters escaped."""
    body = "".join(f"\\u{ord(ch):04x}" if ord(ch) < 0x20 or ord(ch) == 0x7f else "\\" + ch if ch in '\\"' else ch
                   for ch in text)
    return '"' + body + '"'


def key(name: str) -> str:
    return name if BARE.match(name) else basic(name)


def dotted(path: list[str]) -> str:
    return ".".join(key(p) for p in path)


def _float(value: float) -> str:
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return repr(value)


def _string(value: str, rng: random.Random, inline: bool) -> str:
    style = rng.randrange(4)
    printable = all(ch == "\n" or (ch.isprintable() and ch != "\x7f") for ch in value)
    if not inline and style == 0:
        body = value.replace("\\", "\\\\").replace('"', '\\"').replace("\r", "\\r").replace("\t", "\\t")
        body = "".join(ch if ch == "\n" or ch.isprintable() else f"\\U{ord(ch):08x}" for ch in body)
        return '"""\n' + body + '"""'
    if not inline and style == 1 and printable and "'" not in value:
        return "'''\n" + value + "'''"
    if style == 2 and printable and "'" not in value and "\n" not in value:
        return "'" + value + "'"
    return basic(value)


def value(v: object, rng: random.Random, inline: bool = False, indent: str = "") -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return _float(v)
    if isinstance(v, str):
        return _string(v, rng, inline)
    if isinstance(v, dict):
        return "{" + ", ".join(f"{key(k)} = {value(x, rng, True)}" for k, x in v.items()) + "}"
    if not inline and v and rng.random() < 0.5:      # a multi-line array, with a comment that looks like a header
        inner = indent + "  "
        items = "".join(f"{inner}{value(x, rng, False, inner)},\n" for x in v)
        return "[\n" + inner + "# [fake.header]\n" + items + indent + "]"
    return "[" + ", ".join(value(x, rng, True) for x in v) + "]"


def _is_table_array(v: object) -> bool:
    return isinstance(v, list) and bool(v) and all(isinstance(x, dict) for x in v)


def _body(table: dict, path: list[str], rng: random.Random, out: list[str], root: bool) -> None:
    """Key/value lines of `table` under its header, then its subtables as headers of their own."""
    later = []
    for k, v in table.items():
        if isinstance(v, dict) and v and rng.random() < 0.6:
            later.append((k, v))
        elif _is_table_array(v) and rng.random() < 0.6:
            later.append((k, v))
        elif isinstance(v, dict) and v and all(not isinstance(x, (dict, list)) for x in v.values()) \
                and rng.random() < 0.5:
            for sub, x in v.items():
                out.append(f"{key(k)}.{key(sub)} = {value(x, rng)}\n")
        else:
            if rng.random() < 0.2:
                out.append("# a comment: [looks.like] a header\n")
            out.append(f"{key(k)} = {value(v, rng)}\n")
    for k, v in later:
        if isinstance(v, dict):
            out.append(("\n" if rng.random() < 0.5 else "") + f"[{dotted(path + [k])}]\n")
            _body(v, path + [k], rng, out, False)
        else:
            for item in v:
                out.append(f"[[{dotted(path + [k])}]]  # an array of tables\n")
                _body(item, path + [k], rng, out, False)


def render(document: dict, rng: random.Random) -> str:
    out: list[str] = []
    if rng.random() < 0.3:
        out.append("# a file comment\n\n")
    _body(document, [], rng, out, True)
    text = "".join(out)
    return text if not text or rng.random() < 0.8 else text.rstrip("\n")
