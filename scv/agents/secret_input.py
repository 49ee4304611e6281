"""Asking the user for sign-in values: at a terminal with a prompt (keys without echo), otherwise
one line of stdin each, in the order they are asked for, so `login` can be scripted with a pipe.
A value is never taken from the command line, where it would land in shell history and `ps`."""

import getpass
import sys

from scv.core.errors import UsageError

MAX_KEY_CHARS = 4096


class Answers:
    def __init__(self, stream=None):
        self.stream = stream or sys.stdin

    @property
    def interactive(self) -> bool:
        try:
            return self.stream.isatty()
        except (AttributeError, ValueError):
            return False

    def _line(self, what: str) -> str:
        line = self.stream.readline()
        if not line:
            raise UsageError(f"stdin ended before the {what} was given; pipe one line per value, or run this at a "
                             "terminal")
        return line.rstrip("\r\n").strip()

    def value(self, what: str) -> str:
        """A plain value such as a base URL; echoed as typed."""
        if self.interactive:
            try:
                sys.stderr.write(f"{what[0].upper()}{what[1:]}: ")
                sys.stderr.flush()
                answer = self.stream.readline()
            except KeyboardInterrupt:
                raise UsageError(f"no {what} was given; nothing was changed") from None
            return answer.strip()
        return self._line(what)

    def secret(self, what: str) -> str:
        """A key, read without echo at a terminal; checked to be one printable line."""
        if self.interactive:
            try:
                answer = getpass.getpass(f"{what[0].upper()}{what[1:]} (not shown): ", stream=sys.stderr)
            except (KeyboardInterrupt, EOFError):
                raise UsageError(f"no {what} was given; nothing was changed") from None
            answer = answer.strip()
        else:
            answer = self._line(what)
        check_key(answer, what)
        return answer


def check_key(key: str, what: str) -> None:
    # The key itself is never part of an error sentence.
    if not key:
        raise UsageError(f"no {what} was given; nothing was changed")
    if len(key) > MAX_KEY_CHARS:
        raise UsageError(f"the {what} is longer than {MAX_KEY_CHARS} characters; check what was pasted")
    if any(ch.isspace() or not ch.isprintable() for ch in key):
        raise UsageError(f"the {what} contains spaces or control characters; paste only the key")
