"""Structured results (issue 21): a user's JSON Schema (Draft 2020-12), the instruction a model
gets, the document taken out of its reply, and the errors a repair turn is told.

`jsonschema` is imported here only, and this module only where a schema was given, so start-up
and runs without a schema never load it. Every path printed is an RFC 6901 JSON pointer; a JSON
syntax error names its line and column. Remote `$ref`s are refused, never fetched.
"""

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MAX_SCHEMA_BYTES = 1024 * 1024
MAX_ERRORS = 10
MAX_MESSAGE_CHARS = 300
_FENCE = re.compile(r"^[ \t]*```[ \t]*([^\n`]*)\n(.*?)^[ \t]*```[ \t]*$", re.DOTALL | re.MULTILINE)


class SchemaError(ValueError):
    """The schema itself is unusable: missing, not JSON, not an object, not Draft 2020-12, too
    large, or needing a remote `$ref`. `str(err)` is the sentence shown."""


@dataclass(frozen=True)
class ReplyVerdict:
    """A reply's check: `document` when it validated, else up to MAX_ERRORS `{path, message}`."""
    ok: bool
    document: Any = None
    errors: tuple[dict[str, str], ...] = ()


def pointer(parts) -> str:
    """RFC 6901: `~` and `/` in a key escaped, the root the empty string."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def _syntax(err: json.JSONDecodeError) -> str:
    return f"not valid JSON at line {err.lineno}, column {err.colno}: {err.msg}"


def _remote_ref(node: Any, at: list) -> str | None:
    """The pointer of the first `$ref`/`$dynamicRef` that is not inside this document."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("$ref", "$dynamicRef") and isinstance(value, str) and not value.startswith("#"):
                return pointer([*at, key])
            found = _remote_ref(value, [*at, key])
            if found is not None:
                return found
    elif isinstance(node, list):
        for i, value in enumerate(node):
            found = _remote_ref(value, [*at, i])
            if found is not None:
                return found
    return None


def check_schema(schema: Any, where: str = "the schema") -> dict[str, Any]:
    """Refuses what cannot be a usable Draft 2020-12 schema; returns it unchanged."""
    if not isinstance(schema, dict):
        raise SchemaError(f"{where} is not a JSON object; a JSON Schema (Draft 2020-12) is an object such as "
                          '{"type": "object"}')
    size = len(json.dumps(schema, separators=(",", ":"), ensure_ascii=False).encode())
    if size > MAX_SCHEMA_BYTES:
        raise SchemaError(f"{where} is {size} bytes, over the 1 MiB bound for a schema; make it smaller")
    remote = _remote_ref(schema, [])
    if remote is not None:
        raise SchemaError(f"{where} has a $ref outside itself at {remote!r}; SCV never fetches a schema, so inline "
                          "the referenced part under $defs and point at it with #/$defs/...")
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError as Invalid
    try:
        Draft202012Validator.check_schema(schema)
    except Invalid as err:
        raise SchemaError(f"{where} is not a valid Draft 2020-12 schema: at {pointer(err.absolute_path)!r}: "
                          f"{_short(err.message)}") from None
    return schema


def load_schema(path: Path) -> dict[str, Any]:
    """A schema file, checked; every fault is a SchemaError naming the file."""
    where = f"the schema file {str(path)!r}"
    try:
        size = path.stat().st_size
        if size > MAX_SCHEMA_BYTES:
            raise SchemaError(f"{where} is {size} bytes, over the 1 MiB bound for a schema; make it smaller")
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise SchemaError(f"{where} does not exist; give the path of a JSON Schema file") from None
    except IsADirectoryError:
        raise SchemaError(f"{where} is a directory; give the path of a JSON Schema file") from None
    except UnicodeDecodeError:
        raise SchemaError(f"{where} is not UTF-8 text; save the schema as UTF-8 JSON") from None
    except OSError as err:
        raise SchemaError(f"{where} cannot be read ({err.strerror}); check its permissions") from None
    try:
        schema = json.loads(text)
    except json.JSONDecodeError as err:
        raise SchemaError(f"{where} is {_syntax(err)}") from None
    return check_schema(schema, where)


def compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def instruction(schema: dict[str, Any]) -> str:
    """What a model (or a delegated agent) is told; tools stay on, only the final answer is bound."""
    return ("Structured result: use your tools as the task needs; your final reply must be only one JSON "
            "document that validates against this JSON Schema (Draft 2020-12), either the whole reply or in "
            "a single ```json fenced block, with no other JSON fence:\n" + compact(schema))


def repair_prompt(verdict: ReplyVerdict) -> str:
    listed = "\n".join(f"- at {e['path'] or '(the root)'!s}: {e['message']}" for e in verdict.errors)
    return ("Your final reply did not give a JSON document that validates against the required schema:\n"
            f"{listed}\nReply again with only the corrected JSON document (the whole reply, or one ```json "
            "fenced block). Use tools first if you need to.")


def _short(message: str) -> str:
    return message if len(message) <= MAX_MESSAGE_CHARS else message[:MAX_MESSAGE_CHARS - 3] + "..."


def _invalid(message: str, path: str = "") -> ReplyVerdict:
    return ReplyVerdict(False, errors=({"path": path, "message": message},))


def extract(reply: str) -> tuple[Any, str | None]:
    """The document in a reply: the whole reply, or the one ```json fence; (None, why) if neither."""
    stripped = reply.strip()
    try:
        return json.loads(stripped), None
    except json.JSONDecodeError as whole_error:
        whole = whole_error
    fences = [m.group(2) for m in _FENCE.finditer(reply) if m.group(1).strip().lower() == "json"]
    if len(fences) > 1:
        return None, f"the reply has {len(fences)} ```json fenced blocks; give exactly one"
    if len(fences) == 1:
        try:
            return json.loads(fences[0]), None
        except json.JSONDecodeError as err:
            return None, f"the ```json fenced block is {_syntax(err)}"
    if stripped[:1] in ("{", "["):
        try:
            json.JSONDecoder().raw_decode(stripped)
            return None, "the reply has text after its JSON document; reply with the document alone"
        except json.JSONDecodeError:
            pass
    if not stripped:
        return None, "the reply is empty; reply with the JSON document"
    return None, f"the reply is {_syntax(whole)}, and has no ```json fenced block"


def validate(schema: dict[str, Any], document: Any) -> list[dict[str, str]]:
    """At most MAX_ERRORS `{path, message}`, in document order; empty when it validates."""
    from jsonschema import Draft202012Validator
    found = sorted(Draft202012Validator(schema).iter_errors(document),
                   key=lambda e: (list(map(str, e.absolute_path)), e.message))
    return [{"path": pointer(e.absolute_path), "message": _short(e.message)} for e in found[:MAX_ERRORS]]


def check_reply(schema: dict[str, Any], reply: str, limit_bytes: int) -> ReplyVerdict:
    size = len(reply.encode())
    if size > limit_bytes:
        return _invalid(f"the reply is {size} bytes, over tools.output_limit_bytes ({limit_bytes}); the document "
                        "is too large, make it smaller")
    document, why = extract(reply)
    if why is not None:
        return _invalid(why)
    errors = validate(schema, document)
    return ReplyVerdict(False, errors=tuple(errors)) if errors else ReplyVerdict(True, document=document)
