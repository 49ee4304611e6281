"""Structured results (issue 21): checking a 1 MiB reply against a 50-property schema, as
`scv exec --output-schema` does with a final reply (parse, then Draft 2020-12 validation).

Prints milliseconds per check, against a baseline measured in the same process: only parsing the
same reply with json.loads, so the ratio is what validation adds to reading the document.
"""

import json

from tests.benchmarks.common import interleaved
from scv.structured import check_reply, check_schema

PROPERTIES = 50
TARGET_BYTES = 1 << 20
ROUNDS = 5


def _schema() -> dict:
    kinds = [{"type": "string", "maxLength": 64}, {"type": "integer", "minimum": 0},
             {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"},
                                                                           "ok": {"type": "boolean"}},
                                         "required": ["name", "ok"]}},
             {"enum": ["pass", "fail", "skip"]}, {"type": "number"}]
    props = {f"p{i}": kinds[i % len(kinds)] for i in range(PROPERTIES)}
    return check_schema({"type": "object", "properties": props, "required": list(props),
                         "additionalProperties": False})


def _document() -> dict:
    values = ["value", 7, [], "pass", 1.5]
    doc = {f"p{i}": list(values[i % len(values)]) if i % len(values) == 2 else values[i % len(values)]
           for i in range(PROPERTIES)}     # each array its own list
    arrays = [k for k in doc if isinstance(doc[k], list)]
    size = len(json.dumps(doc))
    item = {"name": "tests/test_something.py::test_case", "ok": True}
    per = len(json.dumps(item)) + 1
    count = (TARGET_BYTES - size) // per
    for n in range(count):
        doc[arrays[n % len(arrays)]].append(item)
    return doc


def main() -> None:
    schema, reply = _schema(), json.dumps(_document())
    verdict = check_reply(schema, reply, 2 * TARGET_BYTES)
    assert verdict.ok, verdict.errors
    check, parse = interleaved(lambda: check_reply(schema, reply, 2 * TARGET_BYTES), lambda: json.loads(reply),
                               ROUNDS)
    print(f"   1 MiB reply ({len(reply)} bytes), {PROPERTIES}-property schema: check {check * 1000:.1f} ms, "
          f"json.loads alone {parse * 1000:.1f} ms (baseline), ratio {check / parse:.1f}x")
