"""An MCP server on stdio that misbehaves on purpose (plain Python, no SDK: the SDK will not).

It answers initialize and tools/list correctly; then the tool `garbage` makes it write a line that
is not JSON, `wrong_id` an answer to an id never asked, `huge` a line of 51 MiB, and `ok` a normal
result. Each of the first three is the server's last act of the kind: it goes on serving."""

import json
import sys

TOOLS = [{"name": name, "inputSchema": {"type": "object", "properties": {}}}
         for name in ("garbage", "wrong_id", "huge", "ok")]
# An invalid schema and a name no model accepts: both left out with a note.
TOOLS.append({"name": "broken", "inputSchema": {"type": "object", "properties": {"x": {"type": 12}}}})
TOOLS.append({"name": "bad name!", "inputSchema": {"type": "object"}})


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    message = json.loads(line)
    method, ident = message.get("method"), message.get("id")
    if ident is None:
        continue
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": ident, "result": {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                                                         "serverInfo": {"name": "rude", "version": "1"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": ident, "result": {"tools": TOOLS}})
    elif method == "tools/call":
        tool = message["params"]["name"]
        if tool == "garbage":
            sys.stdout.write("this is not JSON-RPC\n")
            sys.stdout.flush()
        elif tool == "wrong_id":
            send({"jsonrpc": "2.0", "id": 10_000 + ident, "result": {"content": []}})
        elif tool == "huge":
            sys.stdout.write('{"jsonrpc": "2.0", "id": %d, "result": {"content": [{"type": "text", "text": "' % ident)
            chunk = "y" * (1 << 20)
            for _ in range(51):
                sys.stdout.write(chunk)
            sys.stdout.write('"}]}}\n')
            sys.stdout.flush()
        else:
            send({"jsonrpc": "2.0", "id": ident, "result": {"content": [{"type": "text", "text": "fine"}]}})
    else:
        send({"jsonrpc": "2.0", "id": ident, "error": {"code": -32601, "message": "no"}})
