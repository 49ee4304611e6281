"""The `scv` backend: a nested `scv server --stdio` in the agent's private home, kept for the whole
conversation in one live worker (workers/live/nested_scv.py). Its approval requests come back
through the calling session's gate; its own background jobs keep it busy between calls."""

from scv.core.agents.descriptors import NESTED
from scv.core.errors import RefusedError
from scv.tools.agent import live_plan
from scv.tools.agent.backend import AgentCall
from scv.tools.agent.live import LiveBackend


class NestedScvBackend(LiveBackend):
    transport = NESTED
    executor = live_plan.FACTORIES[NESTED]

    def check(self, call: AgentCall) -> None:
        # The model is the nested session's override, fixed when its session starts.
        if call.model is not None and call.conversation is not None and call.conversation.turns > 0:
            raise RefusedError(f"scv takes model only when its conversation starts; omit model to continue "
                               f"{call.conversation.handle}, or omit session to start a new conversation with "
                               "that model")
