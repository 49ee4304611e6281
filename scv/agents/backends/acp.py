"""The `acp` backend: the agent's ACP server (claude-agent-acp, codex-acp, grok agent stdio, dsh
--profile acp) kept for the whole conversation in one live worker (workers/live/acp.py). Its
permission requests come back through the calling session's approval gate."""

from scv.agents import live_plan
from scv.agents.backends.live import LiveBackend
from scv.agents.descriptors import ACP


class AcpBackend(LiveBackend):
    transport = ACP
    executor = live_plan.FACTORIES[ACP]
