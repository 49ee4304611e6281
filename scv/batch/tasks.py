"""The batch input: one JSON object per line, each one `agent` call with an `id`. Every line is
decoded and checked (as the `agent` tool would check the call) before anything starts, and every
bad line is reported with its line number."""

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Callable

import msgspec
from msgspec import Meta

from scv.core.errors import ScvError, UsageError
from scv.core.input_files import read_bounded

TASK_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/@-]{0,127}")
MAX_INPUT_BYTES = 64 * 1024 * 1024
MAX_ERRORS_SHOWN = 20


class TaskLine(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    id: Annotated[str, Meta(min_length=1)]
    prompt: str
    agent: str | None = None
    cwd: str | None = None
    model: str | None = None
    effort: str | None = None
    timeout_seconds: Annotated[int, Meta(ge=1)] | None = None
    # A JSON Schema inline, or a path relative to the batch file, read once by `load` (so a Ray
    # task carries the object, never a path of the driver's machine).
    schema: dict[str, Any] | str | None = None
    isolate: str | None = None          # "worktree": a git worktree of its own (scv/batch/worktree.py)
    base: str | None = None             # the commit the worktree starts at; the full id once checked
    verify: list[str] | None = None     # commands that must all exit 0 after the agent
    verify_timeout_seconds: Annotated[int, Meta(ge=1)] | None = None
    attempts: Annotated[int, Meta(ge=1, le=20)] | None = None
    # This task's limits (docs/limits.md), with its agent's [agents.NAME] ones the smaller.
    max_turns: Annotated[int, Meta(ge=1)] | None = None
    max_tokens: Annotated[int, Meta(ge=1)] | None = None
    max_cost_usd: Annotated[float, Meta(gt=0)] | None = None

    def agent_args(self) -> dict[str, Any]:
        fields = ("prompt", "agent", "cwd", "model", "effort", "timeout_seconds", "schema")
        return {name: getattr(self, name) for name in fields if getattr(self, name) is not None}


@dataclass
class Task:
    line: int
    spec: TaskLine
    prepared: Any           # what the engine's check returned: the local engine's prepared agent call
    agent: str | None = None    # the agent that runs it, once the runner has picked it
    batch: str = "stdout"       # <batch> in an isolated task's branch, scv/<batch>/<id>

    @property
    def id(self) -> str:
        return self.spec.id


class BadInput(UsageError):
    pass


_decoder = msgspec.json.Decoder(TaskLine)


def _explain(error: msgspec.ValidationError) -> str:
    text = str(error)
    unknown = re.match(r"Object contains unknown field `([^`]+)`", text)
    if unknown:
        return (f"unknown field {unknown.group(1)!r} (a task takes id, prompt, agent, cwd, model, effort, "
                "timeout_seconds, schema, isolate, base, verify, verify_timeout_seconds, attempts, max_turns, "
                "max_tokens, max_cost_usd)")
    missing = re.match(r"Object missing required field `([^`]+)`", text)
    if missing:
        return f"the field {missing.group(1)!r} is missing"
    return text[0].lower() + text[1:]


def _schema_file(batch: Path, name: str) -> dict[str, Any]:
    from scv.structured import SchemaError, load_schema
    try:
        return load_schema(batch.parent / name)
    except SchemaError as err:
        raise UsageError(f"{err} (a schema path is relative to the batch file)") from None


def load(path: Path, prepare: Callable[[dict[str, Any]], Any],
         check: Callable[[TaskLine], str | None] | None = None) -> list[Task]:
    """Reads and checks every line; raises BadInput listing the bad lines by number. `check`
    applies the batch's own line fields (isolate, verify, ...) and says what is wrong with a line."""
    data = read_bounded(path, MAX_INPUT_BYTES, "the batch file", "a readable JSONL file")
    tasks, problems, seen = [], [], {}
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip() or raw.lstrip().startswith(b"#"):
            continue
        try:
            spec = _decoder.decode(raw)
        except msgspec.ValidationError as err:
            problems.append(f"line {number}: {_explain(err)}")
            continue
        except msgspec.DecodeError:
            problems.append(f"line {number}: not a JSON object")
            continue
        if not TASK_ID.fullmatch(spec.id):
            problems.append(f"line {number}: id {spec.id!r} must be 1-128 letters, digits or ._:/@- and start with a "
                            "letter or digit")
            continue
        if spec.id in seen:
            problems.append(f"line {number}: id {spec.id!r} is already used on line {seen[spec.id]}")
            continue
        seen[spec.id] = number
        if isinstance(spec.schema, str):
            try:
                spec.schema = _schema_file(path, spec.schema)
            except ScvError as err:
                problems.append(f"line {number}: {err}")
                continue
        problem = check(spec) if check is not None else None
        if problem is not None:
            problems.append(f"line {number}: {problem}")
            continue
        try:
            prepared = prepare(spec.agent_args())
        except ScvError as err:
            problems.append(f"line {number}: {err}")
            continue
        tasks.append(Task(number, spec, prepared))
    if problems:
        shown = problems[:MAX_ERRORS_SHOWN]
        more = f"\n... and {len(problems) - len(shown)} more" if len(problems) > len(shown) else ""
        raise BadInput(f"{path} has {len(problems)} bad line(s); nothing was started. Fix them and run again:\n"
                       + "\n".join(shown) + more)
    if not tasks:
        raise UsageError(f"the batch file {path} holds no tasks; write one JSON object per line")
    return tasks
