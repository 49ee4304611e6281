"""Plays the agent's side of a captured ACP transcript (tests/fixtures/acp/) back to a client on
stdin/stdout: each message the capture's client sent is awaited from the real client (the same
method, or an answer to the same request), and what the captured agent sent after it is printed,
with the ids of its responses rewritten to the ids the real client used. What the client answered
to the agent's own requests is appended to --log. A client that sends something else than the
capture's next message is logged and ends the replay (exit 3). Standard library only."""

import argparse
import json
import sys


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("transcript")
    parser.add_argument("--log", required=True)
    options = parser.parse_args()
    entries = [json.loads(line) for line in open(options.transcript, encoding="utf-8") if line.strip()]
    ids: dict = {}
    log = open(options.log, "a", encoding="utf-8")

    def note(**fields):
        log.write(json.dumps(fields) + "\n")
        log.flush()

    for entry in entries:
        message = entry["msg"]
        if entry["dir"] == "client->agent":
            line = sys.stdin.readline()
            if not line:
                return 0
            ours = json.loads(line)
            note(event="client", message=ours)
            if "method" in message:
                if ours.get("method") != message["method"]:
                    note(event="mismatch", expected=message["method"], got=ours.get("method"))
                    return 3
                if "id" in message:
                    ids[message["id"]] = ours.get("id")
            elif ours.get("id") != message.get("id"):
                note(event="mismatch", expected=message.get("id"), got=ours.get("id"))
                return 3
            continue
        if "method" not in message and "id" in message:
            message = dict(message, id=ids.get(message["id"], message["id"]))
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()
    for line in sys.stdin:          # like the real servers: still there until stdin closes
        note(event="client", message=json.loads(line))
    return 0


if __name__ == "__main__":
    sys.exit(main())
