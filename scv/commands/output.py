"""How `scv tool` and `scv tools` write a result or a refusal: one JSON object on one line."""

import sys

import msgspec


def emit_json(value: dict) -> None:
    sys.stdout.buffer.write(msgspec.json.encode(value) + b"\n")
    sys.stdout.flush()
