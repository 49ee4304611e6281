"""One fake agent, two ways of running a conversation, for the live-agent benchmark's turn-2 figure.

    turn_bench_agent.py --acp        an ACP server on the official SDK: one process, the
                                     conversation kept in memory between prompts
    turn_bench_agent.py -p ... PROMPT  Claude Code's print mode: `--session-id ID` starts a
                                     conversation, `--resume ID` continues it from the file the
                                     previous turn saved under $HOME; prints stream-json and exits

Both modes import the same modules before they look at their arguments (the SDK and what it pulls
in), so each process pays the same start-up; the reply is the same function of the history.
"""

import asyncio
import json
import os
import sys
import uuid
from pathlib import Path

import acp
from acp import schema


def reply_to(history: list[str], prompt: str) -> str:
    return f"turn {len(history) // 2 + 1}: {prompt} ({len(history)} earlier messages)"


class Agent:
    """The ACP side: the history lives in this process."""

    def __init__(self):
        self.conn = None
        self.history: list[str] = []

    def on_connect(self, conn) -> None:
        self.conn = conn

    async def initialize(self, protocol_version, client_capabilities=None, client_info=None, **kwargs):
        return schema.InitializeResponse(protocol_version=1)

    async def new_session(self, cwd, mcp_servers=None, **kwargs):
        return schema.NewSessionResponse(session_id=str(uuid.uuid4()))

    async def prompt(self, session_id, prompt, **kwargs):
        text = " ".join(block.text for block in prompt if getattr(block, "text", None))
        answer = reply_to(self.history, text)
        self.history += [text, answer]
        await self.conn.session_update(session_id, acp.update_agent_message_text(answer))
        return schema.PromptResponse(stop_reason="end_turn",
                                     usage=schema.Usage(input_tokens=11, output_tokens=5, total_tokens=16))

    async def cancel(self, session_id, **kwargs):
        pass


def print_mode(argv: list[str]) -> None:
    """The resume side: the history is read from and written back to the session's file."""
    session = None
    for flag in ("--session-id", "--resume"):
        if flag in argv:
            session = argv[argv.index(flag) + 1]
    session = session or str(uuid.uuid4())
    saved = Path(os.environ["HOME"]) / "sessions" / f"{session}.json"
    history = json.loads(saved.read_text()) if "--resume" in argv else []
    prompt = argv[-1]
    answer = reply_to(history, prompt)
    saved.parent.mkdir(parents=True, exist_ok=True)
    saved.write_text(json.dumps(history + [prompt, answer]))
    events = [{"type": "system", "subtype": "init", "session_id": session},
              {"type": "assistant", "session_id": session,
               "message": {"model": "fake", "content": [{"type": "text", "text": answer}]}},
              {"type": "result", "subtype": "success", "is_error": False, "session_id": session, "result": answer,
               "stop_reason": "end_turn", "usage": {"input_tokens": 11, "output_tokens": 5}}]
    sys.stdout.write("".join(json.dumps(event) + "\n" for event in events))


if __name__ == "__main__":
    if sys.argv[1:] == ["--acp"]:
        asyncio.run(acp.run_agent(Agent()))
    else:
        print_mode(sys.argv[1:])
