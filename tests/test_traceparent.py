"""scv/core/traceparent.py: the W3C traceparent both sides of a call read and write."""

import pytest

from scv.core import traceparent
from scv.core.traceparent import TraceContext

GOOD = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def test_parse_and_format_round_trip():
    context = traceparent.parse(GOOD, " vendor=a,other=b ")
    assert context == TraceContext("0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331", 1, "vendor=a,other=b")
    assert context.traceparent == GOOD
    assert traceparent.parse("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00").flags == 0
    # A later version may add fields after the four it shares with 00.
    assert traceparent.parse("01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-extra") is not None


@pytest.mark.parametrize("header", [
    None, "", "garbage", GOOD.upper(), GOOD + "-extra",                           # 00 has exactly four fields
    "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",                    # forbidden version
    "00-00000000000000000000000000000000-b7ad6b7169203331-01",                    # zero trace id
    "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",                    # zero span id
    "00-0af7651916cd43dd8448eb211c80319-b7ad6b7169203331-01",                     # short trace id
])
def test_invalid_headers_are_no_context(header):
    assert traceparent.parse(header) is None


def test_environment_options_and_meta_carry_the_same_context():
    context = traceparent.parse(GOOD, "vendor=a")
    env = {"TRACESTATE": "stale=1"}
    traceparent.apply_options(env, traceparent.to_options(context))
    assert env == {"TRACEPARENT": GOOD, "TRACESTATE": "vendor=a"}
    assert traceparent.from_environ(env) == context
    plain = traceparent.parse(GOOD)
    traceparent.to_environ(env, plain)
    assert env == {"TRACEPARENT": GOOD}       # another trace's tracestate does not stay behind
    assert traceparent.to_options(None) == {} and traceparent.from_options({}) is None
    assert traceparent.from_options({"trace": {"trace_id": 5}}) is None
    untouched = {"TRACEPARENT": "inherited"}
    traceparent.apply_options(untouched, {})
    assert untouched == {"TRACEPARENT": "inherited"}   # tracing off: the environment as it was
    assert traceparent.from_meta(traceparent.to_meta(context)) == context
    assert traceparent.to_meta(None) == {} and traceparent.from_meta("x") is None
    assert traceparent.from_meta({"traceparent": 7}) is None
