"""The small error tree that foreign exceptions are translated into, once, where they occur.

Each class carries the process exit status a command should end with and a one-sentence
message for the user (what was wrong and what to do). The tree, with the statuses commands
exit with that no exception carries (a timeout and an interruption end a run, they are not
errors of it):

```
ScvError                 1  SCV's own error: `str(err)` is the sentence shown to the user
├── UsageError           2  the command line or the arguments are wrong; nothing ran
│   └── BadInput         2    a batch input file's lines (scv/batch/tasks.py)
├── ConfigError          2  a configuration file or value is wrong; nothing ran
├── RefusedError         2  a tool call refused before a worker existed (arguments, approval)
├── ProtocolError        1  a frame or message on a pipe could not be decoded
├── WorkerLost           1  a live worker is gone, or none could be started
├── PathError            1  a workspace path cannot be opened as asked (scv/core/safe_open.py)
├── ProviderError        1  the model provider failed (scv/providers/base.py)
│   └── TurnLimit        1    agent.max_turns responses without a final reply (scv/session/turn_loop.py)
├── TurnCancelled        1  the turn was cancelled while the model answered
└── the agent commands' own: NotInstalled, StatusFailed (scv/agents/login.py), UnreadableFile
    (pi_setup.py), CredentialsUnsafe (dsh_key.py), ImportFailed (imports.py), NotFound
    (scv/commands/agents.py)                                                      1

EXIT_LIMIT                 3  scv exec, scv batch: a turn, token or USD limit stopped the run (docs/limits.md)
EXIT_SCHEMA_INVALID        4  scv exec --output-schema: the final reply did not validate after a repair turn
EXIT_TIMEOUT             124  scv exec --timeout passed: the running call was cancelled
EXIT_SIGINT, EXIT_SIGTERM  130, 143  interrupted: the running call was cancelled, its processes stopped
```
"""

import signal

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_LIMIT = 3                         # a limit (docs/limits.md) stopped the run
EXIT_SCHEMA_INVALID = 4                # scv exec --output-schema: the final reply never validated
EXIT_TIMEOUT = 124
EXIT_SIGINT = 128 + signal.SIGINT       # 130, as a shell reports a child SIGINT ended
EXIT_SIGTERM = 128 + signal.SIGTERM     # 143


def interrupted_exit(signum: int) -> int:
    """The exit status of a run that `signum` (SIGINT or SIGTERM) interrupted."""
    return EXIT_SIGINT if signum == signal.SIGINT else EXIT_SIGTERM


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
    """A live worker is gone (its agent exited between calls), or none could be started."""

    exit_code = 1
