"""DeepSeek Harness signs in with an API key only: `refs.DEEPSEEK_API_KEY` in its own credential
file, `.dsh/.credentials.yaml` in its private home. SCV edits that small YAML file itself, at the
text level: only the `refs.DEEPSEEK_API_KEY` line is replaced (or added), every other entry DeepSeek
Harness keeps there stays as written. A file whose shape is not the simple block mapping SCV can
edit safely is refused, and left as it was."""

import os
import re
from dataclasses import dataclass
from pathlib import Path

from scv.core.agents.descriptors import DESCRIPTORS, DSH, state_dir
from scv.core.errors import ScvError
from scv.core.files import write_atomic

CREDENTIALS = ".credentials.yaml"
REFS, ENTRY = "refs", "DEEPSEEK_API_KEY"
DEFAULT_INDENT = "  "

# `name: value` with a plain or quoted name; the value (with any comment) is judged separately.
_MAPPING_LINE = re.compile(r"""^(?P<indent> *)(?P<name>[A-Za-z0-9_.-]+|"[^"\\]*"|'[^']*') *:(?: +(?P<value>.*)|)$""")
_DOUBLE = re.compile(r'^"(?:[^"\\]|\\.)*" *(?:#.*)?$')
_SINGLE = re.compile(r"^'(?:[^']|'')*' *(?:#.*)?$")
_EMPTY_FLOW = re.compile(r"^\{ *\} *(?:#.*)?$")
_FLAT_FLOW = re.compile(r"""^[\[{][^"'#\[\]{}]*[\]}] *(?:#.*)?$""")


class CredentialsUnsafe(ScvError):
    exit_code = 1


def credentials_path(scv_home: Path) -> Path:
    return state_dir(scv_home, DESCRIPTORS[DSH]) / CREDENTIALS


def _yaml_string(value: str) -> str:
    """A YAML double-quoted scalar; keys are checked printable without spaces beforehand."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def credentials_yaml(key: str) -> bytes:
    return ("# Written by `scv agents login dsh`.\n" + _refs_block(key)).encode()


def _refs_block(key: str) -> str:
    return f"{REFS}:\n{DEFAULT_INDENT}{ENTRY}: {_yaml_string(key)}\n"


def _name(raw: str) -> str:
    return raw[1:-1] if raw[:1] in "\"'" else raw


def _value(raw: str | None) -> str:
    value = (raw or "").strip()
    return "" if value.startswith("#") else value


def _one_line_scalar(value: str) -> bool:
    """A value that ends on its own line: empty, quoted and closed, a flat flow collection, or plain."""
    if not value:
        return True
    if value[0] == '"':
        return bool(_DOUBLE.match(value))
    if value[0] == "'":
        return bool(_SINGLE.match(value))
    if value[0] in "[{":
        return bool(_FLAT_FLOW.match(value))
    return value[0] not in "|>"


class _Unsafe(Exception):
    pass


@dataclass
class _Layout:
    lines: list[str]
    refs: int | None = None              # index of the `refs:` line
    refs_empty_flow: bool = False        # `refs: {}`
    indent: str = DEFAULT_INDENT         # of the entries under refs
    last_entry: int | None = None        # index of the last entry line under refs
    entry: int | None = None             # index of the DEEPSEEK_API_KEY line


def _layout(text: str) -> _Layout:
    """Where refs and its entries are; raises _Unsafe (with the reason) for any other shape."""
    lines = text.split("\n")
    found = _Layout(lines)
    in_refs = seen_top = False
    for number, line in enumerate(lines):
        stripped = line.strip(" ")
        if "\r" in line or "\t" in line[:len(line) - len(line.lstrip(" \t"))]:
            raise _Unsafe(f"line {number + 1} has a tab or carriage return")
        if not stripped or stripped.startswith("#"):
            continue
        if line[0] != " ":
            seen_top = True
            match = _MAPPING_LINE.match(line)
            if match is None:
                raise _Unsafe(f"line {number + 1} is not a top-level `name: value` entry")
            value = _value(match["value"])
            # a block scalar's lines are indented, so it cannot hide a top-level line
            if value[:1] not in ("|", ">") and not _one_line_scalar(value):
                raise _Unsafe(f"line {number + 1} starts a value that does not end on its line")
            in_refs = _name(match["name"]) == REFS
            if in_refs:
                if found.refs is not None:
                    raise _Unsafe(f"{REFS} appears twice")
                found.refs = number
                if _EMPTY_FLOW.match(value):
                    found.refs_empty_flow = True
                    in_refs = False
                elif value:                  # a flow mapping, an anchor, a block scalar...
                    raise _Unsafe(f"{REFS} is not a block of `NAME: value` lines")
            continue
        if not seen_top:
            raise _Unsafe(f"line {number + 1} is indented before any top-level entry")
        if not in_refs:
            continue                     # part of another entry's value, kept as written
        match = _MAPPING_LINE.match(line)
        if match is None:
            raise _Unsafe(f"line {number + 1} under {REFS} is not a `NAME: value` entry")
        if found.last_entry is None:
            found.indent = match["indent"]
        elif match["indent"] != found.indent:
            raise _Unsafe(f"line {number + 1} under {REFS} is nested or indented differently")
        if not _one_line_scalar(_value(match["value"])):
            raise _Unsafe(f"line {number + 1} under {REFS} has a value that does not end on its line")
        found.last_entry = number
        if _name(match["name"]) == ENTRY:
            if found.entry is not None:
                raise _Unsafe(f"{ENTRY} appears twice under {REFS}")
            found.entry = number
    return found


def with_key(text: str, key: str) -> str:
    """`text` with `refs.DEEPSEEK_API_KEY` set to `key` and every other line as it was."""
    found = _layout(text)
    lines = list(found.lines)
    line = f"{found.indent}{ENTRY}: {_yaml_string(key)}"
    if found.entry is not None:
        lines[found.entry] = line
    elif found.refs is not None and found.refs_empty_flow:
        lines[found.refs] = f"{REFS}:"
        lines.insert(found.refs + 1, line)
    elif found.refs is not None:
        lines.insert((found.last_entry if found.last_entry is not None else found.refs) + 1, line)
    else:
        body = "\n".join(lines)
        return body + ("" if not body or body.endswith("\n") else "\n") + _refs_block(key)
    edited = "\n".join(lines)
    again = _layout(edited)              # the edit must read back as exactly the one entry we wrote
    if again.entry is None or again.lines[again.entry] != line:
        raise _Unsafe(f"the edited {REFS} did not read back as expected")
    return edited


def _unsafe_sentence(path: Path, reason: str) -> str:
    return (f"{path} has a shape SCV cannot edit safely ({reason}); nothing was written; move it aside or run "
            "scv agents logout dsh (which removes it), then scv agents login dsh again")


def _current(path: Path) -> str | None:
    try:
        return path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        return None
    except UnicodeDecodeError:
        raise CredentialsUnsafe(_unsafe_sentence(path, "it is not UTF-8 text")) from None
    except OSError as err:
        raise CredentialsUnsafe(f"could not read {path} ({err.strerror}); check its permissions") from None


def check_editable(scv_home: Path) -> None:
    """Refuses before a key is asked for when the existing file could not be edited."""
    path = credentials_path(scv_home)
    text = _current(path)
    if text is not None:
        try:
            _layout(text)
        except _Unsafe as err:
            raise CredentialsUnsafe(_unsafe_sentence(path, str(err))) from None


def store_key(scv_home: Path, key: str) -> Path:
    """Written atomically with mode 0600 (folders 0700); other entries of an existing file are kept."""
    path = credentials_path(scv_home)
    text = _current(path)
    try:
        data = credentials_yaml(key) if text is None else with_key(text, key).encode()
    except _Unsafe as err:
        raise CredentialsUnsafe(_unsafe_sentence(path, str(err))) from None
    write_atomic(path, data)
    return path


def remove_key(scv_home: Path) -> bool:
    try:
        os.unlink(credentials_path(scv_home))
    except FileNotFoundError:
        return False
    except OSError as err:
        raise ScvError(f"could not remove {credentials_path(scv_home)} ({err.strerror})") from None
    return True
