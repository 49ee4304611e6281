"""A minimal ACP agent for the live-agent benchmark (standard library only, so its own cost is
small): it answers initialize and session/new, and a prompt "N" with N permission requests, one
after the other, each waiting for its answer, then ends the turn."""

import json
import sys

PERMISSION = {"jsonrpc": "2.0", "method": "session/request_permission", "params": {
    "sessionId": "bench", "toolCall": {"toolCallId": "t", "title": "touch marker.txt", "kind": "edit",
                                       "locations": [{"path": "/ws/marker.txt"}]},
    "options": [{"optionId": "allow", "name": "Allow", "kind": "allow_once"},
                {"optionId": "reject", "name": "Reject", "kind": "reject_once"}]}}


def send(message) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    message = json.loads(line)
    method, request_id = message.get("method"), message.get("id")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": request_id, "result": {"protocolVersion": 1}})
    elif method == "session/new":
        send({"jsonrpc": "2.0", "id": request_id, "result": {"sessionId": "bench"}})
    elif method == "session/prompt":
        count = int(message["params"]["prompt"][0]["text"])
        for index in range(count):
            send(dict(PERMISSION, id=index))
            sys.stdin.readline()
        send({"jsonrpc": "2.0", "id": request_id, "result": {"stopReason": "end_turn"}})
