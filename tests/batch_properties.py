"""Properties of the batch and delegation validators, shared by tests/test_batch_properties.py
(short runs) and fuzz/fuzz_batch.py (long runs): whatever the input, each either accepts a
well-formed value or refuses with SCV's own error, never another exception."""

import json
import tempfile
from pathlib import Path

import msgspec
from hypothesis import strategies as st

from scv.batch import results, tasks
from scv.core import files
from scv.core.delegations import records
from scv.core.errors import RefusedError, UsageError
from scv.delegations.transcripts_gc import HOUR, parse_age

FIELDS = st.dictionaries(st.sampled_from(["id", "prompt", "agent", "cwd", "model", "effort", "timeout_seconds",
                                          "colour"]),
                         st.one_of(st.text(max_size=20), st.integers(-5, 10**6), st.none(), st.booleans()),
                         max_size=8)
LINES = st.lists(st.one_of(FIELDS.map(lambda d: json.dumps(d).encode()), st.binary(max_size=40)), max_size=12)


def _accept(args: dict):
    if args["prompt"].startswith("-"):
        raise RefusedError("agent prompt starts with '-'")
    return args


def check_batch_input(lines: list[bytes]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "b.jsonl"
        path.write_bytes(b"\n".join(lines))
        try:
            loaded = tasks.load(path, _accept)
        except UsageError:
            return
        ids = [task.id for task in loaded]
        assert len(ids) == len(set(ids))
        assert all(tasks.TASK_ID.fullmatch(i) for i in ids)
        assert all(isinstance(task.spec.prompt, str) for task in loaded)


def check_output_resume(lines: list[bytes]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "out.jsonl"
        path.write_bytes(b"\n".join(lines))
        try:
            kept = results.completed_lines(path)
        except UsageError:
            return
        for task_id, line in kept.items():
            value = msgspec.json.decode(line)
            assert value["id"] == task_id and value["status"] == "completed"


def check_age(text: str) -> None:
    try:
        seconds = parse_age(text)
    except ValueError:
        return
    assert seconds >= HOUR


def check_record_bytes(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        folder = records.folder(home)
        files.ensure_folder(folder)
        (folder / "codex-abc.json").write_bytes(data)
        found = records.all_records(home)
        assert all(isinstance(r.pid, int) and isinstance(r.handle, str) for r in found)


AGES = st.one_of(st.text(max_size=12), st.from_regex(r"\d{1,7}[mhdwy]?", fullmatch=True))
RECORD_BYTES = st.one_of(st.binary(max_size=200), FIELDS.map(lambda d: json.dumps(d).encode()))
