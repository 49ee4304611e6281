"""The supervisor's side of a live agent's call (an ACP server, or a nested SCV): the command line
its worker starts, the approval summary, and the arguments its worker's `start`/`turn` read
(workers/live/conversation.py documents them). The model sees the same schema and the same
result whichever backend runs; only what the person approving reads says how it runs."""

import json

from scv.agents.offered import OfferedAgent
from scv.core.agents.descriptors import ACP, NESTED
from scv.tools.base import short

FACTORIES = {ACP: "workers.live.acp:start", NESTED: "workers.live.nested_scv:start"}
RISK_NOTE = ("Delegate risk: the agent reads, writes and runs commands on its own, may use the credentials it can "
             "reach, and calls its own model provider.")


def server_argv(offered: OfferedAgent, full_permissions: bool) -> list[str]:
    """The live process's command line: the full-permission variant when the agent's switch is an
    argument (grok agent --always-approve stdio)."""
    choice = offered.choice
    if choice is None or choice.transport not in FACTORIES:
        raise ValueError(f"{offered.descriptor.name} does not run on a live backend")
    if full_permissions and choice.full_argv is not None:
        return list(choice.full_argv)
    return list(choice.argv)


def summary(offered: OfferedAgent, *, prompt: str, directory: str, timeout_seconds: float, full_permissions: bool,
            conversation: str | None, model: str | None = None, effort: str | None = None) -> str:
    """What the person approving reads: the agent, the live process (absolute path and argument
    vector) or the conversation it continues, the bounded prompt, directory, timeout and risk."""
    name = offered.descriptor.name
    argv = server_argv(offered, full_permissions)
    how = "over the Agent Client Protocol" if offered.transport == ACP else "as a nested SCV session"
    shown = json.dumps([short(arg, 300) for arg in argv[1:]], ensure_ascii=False)
    if conversation is None:
        text = f"agent {name}: Launch {argv[0]} with args {shown} {how}, kept for the conversation,"
    else:
        text = f"agent {name}: Continue conversation {conversation} ({argv[0]} {how})"
    options = "".join(f", {key} {value}" for key, value in (("model", model), ("effort", effort)) if value)
    text += (f" in {directory}{options} (timeout {int(timeout_seconds)} s), prompt: "
             f"{json.dumps(short(prompt, 300), ensure_ascii=False)}. {RISK_NOTE}")
    if offered.transport == ACP:
        text += " Its own permission requests come back here for approval."
    if full_permissions:
        text += f" FULL PERMISSIONS: {name} runs with its own approvals and sandbox switched off."
    return text

