"""A hypothesis property (issue 21): for generated Draft 2020-12 schemas and JSON documents, the
verdict of SCV's reply check equals jsonschema's own, whether the document is the whole reply or
in a ```json fence, and every error path is an RFC 6901 pointer that resolves in the document."""

import json

from hypothesis import given, settings, strategies as st
from jsonschema import Draft202012Validator

from scv.structured import MAX_ERRORS, check_reply, check_schema

KEYS = st.sampled_from(["a", "b", "a/b", "t~1", "x y"])
SCALARS = st.none() | st.booleans() | st.integers(-5, 5) | st.sampled_from(["", "a", "pass", "é"])
DOCUMENTS = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=3),
                         max_leaves=10)
TYPES = st.sampled_from(["null", "boolean", "integer", "number", "string", "array", "object"])


def _schemas(inner):
    return st.fixed_dictionaries({}, optional={
        "type": TYPES | st.lists(TYPES, min_size=1, max_size=3, unique=True),
        "properties": st.dictionaries(KEYS, inner, max_size=3),
        "required": st.lists(KEYS, max_size=2, unique=True),
        "items": inner,
        "enum": st.lists(SCALARS, min_size=1, max_size=3),
        "minimum": st.integers(-3, 3),
        "maxItems": st.integers(0, 3),
        "additionalProperties": st.booleans(),
        "minLength": st.integers(0, 2),
        "not": inner,
    })


SCHEMAS = st.recursive(st.fixed_dictionaries({}, optional={"type": TYPES}), _schemas, max_leaves=6)


def resolve(document, path: str):
    for token in path.split("/")[1:]:
        token = token.replace("~1", "/").replace("~0", "~")
        document = document[int(token)] if isinstance(document, list) else document[token]
    return document


@settings(max_examples=300, deadline=None)
@given(SCHEMAS, DOCUMENTS, st.booleans())
def test_verdict_equals_jsonschemas(schema, document, fenced):
    check_schema(schema)
    text = json.dumps(document)
    reply = f"Result:\n```json\n{text}\n```\n" if fenced else text
    verdict = check_reply(schema, reply, 1 << 20)
    expected = Draft202012Validator(schema).is_valid(document)
    assert verdict.ok == expected
    if verdict.ok:
        assert verdict.document == document
    else:
        assert 1 <= len(verdict.errors) <= MAX_ERRORS
        for error in verdict.errors:
            resolve(document, error["path"])        # raises if the pointer does not resolve
