"""The small error tree that foreign exceptions are translated into, once, where they occur.

Each class carries the process exit status a command should end with and a one-sentence
message for the user (what was wrong and what to do).
"""


class ScvError(Exception):
    """Base of SCV's own errors: `str(err)` is the sentence shown to the user."""

    exit_code = 1


class UsageError(ScvError):
    """The command line or the call's arguments are wrong; nothing ran."""

    exit_code = 2


class ConfigError(ScvError):
    """A configuration file or value is wrong; nothing ran."""

    exit_code = 2


class RefusedError(ScvError):
    """A tool call was refused before a worker existed (bad arguments, unknown tool, denied)."""

    exit_code = 2


class ProtocolError(ScvError):
    """A frame or message on a pipe could not be decoded."""

    exit_code = 1


class WorkerLost(ScvError):
    """A worker ended without sending its result."""

    exit_code = 1
