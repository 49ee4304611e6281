"""A command line in its plain form, read without click: `scv exec PROMPT --json`, `scv tool NAME
ARGS` and `scv tools` as scripts and CI write them (scv/entry.py runs them). Loading click costs
a short command about 20 ms of its start-up, so these lines are read here; anything not read
exactly as click reads it (help, a value click would refuse or convert otherwise, an unknown or
repeated option, `--`, short options joined) gives None, and click reads the line instead, with
its own messages.
tests/test_plain_argv.py checks against click itself that every line read here is read alike."""

import os
import stat
from pathlib import Path
from typing import Any, Callable

import msgspec


class Unread(Exception):
    """A value this reader leaves to click."""


def text(value: str) -> str:
    if value.startswith("-"):
        raise Unread              # click may take it for an option
    return value


def positive_int(value: str) -> int:
    """click.IntRange(min=1), for plain digits only (click's int() takes more: signs, `_`, spaces)."""
    if not (value.isascii() and value.isdigit()) or int(value) < 1:
        raise Unread
    return int(value)


def positive_float(value: str) -> float:
    """click.FloatRange(min=0, min_open=True), for plain decimals only (not `inf`, `nan`, `1e3`)."""
    whole, _, fraction = value.partition(".")
    if not all(part.isascii() and part.isdigit() for part in (whole, fraction or "0")) or float(value) <= 0:
        raise Unread
    return float(value)


def file_path(value: str) -> Path:
    """click.Path(path_type=Path) (with or without dir_okay=False): a path that does not exist, or a
    readable regular file; anything click checks further (a folder, an unreadable file) is its."""
    if not value or value.startswith("-") or "\x00" in value:     # os.stat refuses a NUL with ValueError
        raise Unread
    try:
        found = os.stat(value)
    except OSError:
        return Path(value)
    if not stat.S_ISREG(found.st_mode) or not os.access(value, os.R_OK):
        raise Unread
    return Path(value)


class Option(msgspec.Struct, frozen=True):
    name: str                          # the parameter's name in the command's function
    flags: tuple[str, ...]             # "--timeout", "-C"
    convert: Callable[[str], Any] | None = None      # None: a flag, True when given


class Signature(msgspec.Struct, frozen=True):
    """What a command takes: positional arguments in order (the first `required` must be given)
    and options; every parameter not given is None, or False for a flag."""
    arguments: tuple[str, ...]
    required: int
    options: tuple[Option, ...]


def read(argv: list[str], signature: Signature) -> dict[str, Any] | None:
    """The command's parameters from `argv` (after the command's name), or None to let click read it."""
    by_flag = {flag: option for option in signature.options for flag in option.flags}
    values: dict[str, Any] = {option.name: None if option.convert else False for option in signature.options}
    values.update(dict.fromkeys(signature.arguments))
    given: set[str] = set()
    positional: list[str] = []
    at = 0
    try:
        while at < len(argv):
            token = argv[at]
            at += 1
            if token == "-" or not token.startswith("-"):
                positional.append(token)
                continue
            flag, joined, value = token.partition("=") if token.startswith("--") else (token, "", "")
            option = by_flag.get(flag)
            if option is None or option.name in given:
                return None
            given.add(option.name)
            if option.convert is None:
                if joined:
                    return None
                values[option.name] = True
                continue
            if not joined:
                if at == len(argv):
                    return None
                value = argv[at]
                at += 1
            values[option.name] = option.convert(value)
    except Unread:
        return None
    if not signature.required <= len(positional) <= len(signature.arguments):
        return None
    values.update(zip(signature.arguments, positional))
    return values
