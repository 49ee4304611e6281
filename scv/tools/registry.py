"""The one place tools are registered."""

from typing import Iterator

from scv.errors import RefusedError
from scv.tools.agent import AgentTool
from scv.tools.agent_cancel import AgentCancelTool
from scv.tools.agent_status import AgentStatusTool
from scv.tools.agent_wait import AgentWaitTool
from scv.tools.base import ToolContext, ToolSpec
from scv.tools.bash import BashTool
from scv.tools.chat_attach import ChatAttachTool
from scv.tools.chat_history import ChatHistoryTool
from scv.tools.chat_keep import ChatKeepTool
from scv.tools.services import Services
from scv.tools.read import ReadTool
from scv.tools.read_skill import ReadSkillTool
from scv.tools.web_fetch import WebFetchTool
from scv.tools.web_search import WebSearchTool
from scv.tools.write import WriteTool

BUILTIN: tuple[type[ToolSpec], ...] = (ReadTool, WriteTool, BashTool, WebFetchTool, WebSearchTool, AgentTool,
                                         AgentWaitTool, AgentStatusTool, AgentCancelTool, ReadSkillTool,
                                         ChatAttachTool, ChatHistoryTool, ChatKeepTool)


class Registry:
    def __init__(self):
        self._tools: dict[str, ToolSpec] = {}

    def register(self, spec: ToolSpec) -> None:
        if spec.name in self._tools:
            raise ValueError(f"a tool named {spec.name!r} is already registered")
        self._tools[spec.name] = spec

    def get(self, name: str) -> ToolSpec:
        try:
            return self._tools[name]
        except KeyError:
            known = ", ".join(sorted(self._tools))
            raise RefusedError(f"unknown tool {name!r}; the tools are: {known}") from None

    def __iter__(self) -> Iterator[ToolSpec]:
        return iter(self._tools.values())

    def names(self) -> list[str]:
        return list(self._tools)


def build_registry(ctx: ToolContext, services: Services | None = None) -> Registry:
    """The tools a session offers: every built-in tool its configuration enables, each built with
    the session's collaborators."""
    registry = Registry()
    for spec_class in BUILTIN:
        spec = spec_class(services)
        if spec.enabled(ctx):
            registry.register(spec)
    return registry


def executor_modules() -> list[str]:
    """What the fork point preloads: every built-in tool's executor module."""
    return sorted({spec_class.executor.partition(":")[0] for spec_class in BUILTIN})
