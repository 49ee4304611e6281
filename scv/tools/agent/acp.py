"""The `acp` backend: the agent's ACP server (claude-agent-acp, codex-acp, grok agent stdio, dsh
--profile acp) kept for the whole conversation in one live worker (workers/live/acp.py). Its
permission requests come back through the calling session's approval gate."""

from scv.core.agents.descriptors import ACP
from scv.tools.agent import live_plan
from scv.tools.agent.live import LiveBackend


class AcpBackend(LiveBackend):
    transport = ACP
    executor = live_plan.FACTORIES[ACP]
