"""The `resume` backend: the agent's CLI once per turn, in a fresh worker (workers/agent.py).

The supervisor builds the exact argument vector here, so the approval shows what runs; a
conversation continues with the CLI's own resume arguments and session id, which the worker
reports in the result's private part.
"""

import json
import os
from pathlib import Path

from scv.agents.conversations import Conversation
from scv.core.agents.descriptors import agent_home, build_argv
from scv.core.messages import Result
from scv.tools.agent.backend import AgentBackend, AgentCall, turn_directory, turn_fields
from scv.tools.base import Launch, ToolContext, short

EXECUTOR = "workers.agent:execute"


class CliBackend(AgentBackend):
    transport = "resume"

    def keeps_conversations(self, call: AgentCall) -> bool:
        return call.offered.takes("session")

    def _argv(self, call: AgentCall, *, new_session: str | None, resume: str | None, outfile: str) -> list[str]:
        return build_argv(call.offered.descriptor, call.offered.executable, call.prompt, model=call.model,
                          effort=call.effort, full_permissions=call.full_permissions, new_session=new_session,
                          resume=resume, outfile=outfile)

    def summary(self, call: AgentCall, ctx: ToolContext) -> str:
        conversation = call.conversation
        resume = f"<session of {conversation.handle}>" if conversation is not None else None
        argv = self._argv(call, new_session="<new session id>", resume=resume, outfile="<private tmp file>")
        shown = [short(arg, 300) for arg in argv[1:]]
        directory = turn_directory(call, ctx)
        text = (f"agent {call.name}: Launch {argv[0]} with args {json.dumps(shown, ensure_ascii=False)} in "
                f"{directory} (timeout {int(call.timeout_seconds)} s). Delegate risk: the agent reads, "
                "writes and runs commands on its own, may use the credentials it can reach, and calls its own "
                "model provider.")
        if call.full_permissions:
            text += f" FULL PERMISSIONS: {call.name} runs with its own approvals and sandbox switched off."
        return text

    def run(self, call: AgentCall, conversation: Conversation | None, ctx: ToolContext, launch: Launch,
            home: Path) -> Result:
        descriptor = call.offered.descriptor
        new_session = resume = None
        if conversation is not None and conversation.vendor_id is not None:
            resume = conversation.vendor_id
        elif conversation is not None and not descriptor.session_from_cli:
            # SCV chooses the CLI's session id for a new conversation (Claude Code).
            import uuid      # late: only a new Claude conversation needs an id
            conversation.new_vendor_id = new_session = str(uuid.uuid4())
        outfile = ""
        if "{outfile}" in descriptor.output_args:
            outfile = str(agent_home(home, call.name) / "tmp" / os.urandom(8).hex() /
                          "last-message.txt")
        args = {**turn_fields(call, conversation, ctx, f"{call.name}-{os.urandom(3).hex()}"),
                "argv": self._argv(call, new_session=new_session, resume=resume, outfile=outfile),
                "outfile": outfile or None}
        return launch.fresh(launch.message(EXECUTOR, args))
