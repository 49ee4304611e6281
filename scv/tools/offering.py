"""When a session offers a built-in tool: what each one needs (catalog.NEEDS), judged by one
function for a session's registry (from its context and services) and for `scv tools` (which
lists the tools from the catalog without importing a spec, so it learns the agents by discovery)."""

from typing import Any, Callable

from scv.tools.catalog import NEEDS

# What a tool may need; a fact is asked for only when a tool needs it (agents are discovered then).
AGENTS, JOBS, SKILLS, CHANNEL, CHAT_LOG, SEARCH = "agents", "jobs", "skills", "channel", "chat_log", "search"


def offered(name: str, fact: Callable[[str], bool]) -> bool:
    """Whether the tool `name` is offered (a tool the catalog does not list needs nothing)."""
    return all(fact(need) for need in NEEDS.get(name, ()))


def facts(ctx: Any, agents: Callable[[], bool], jobs: bool) -> Callable[[str], bool]:
    """The facts of one session (`ctx` a ToolContext): `agents`, whether any delegated agent is
    offered, asked only when a tool needs it; `jobs`, whether it keeps a job table."""
    def fact(need: str) -> bool:
        if need == AGENTS:
            return ctx.delegation_depth < ctx.config.agent.max_delegation_depth and agents()
        if need == JOBS:
            return ctx.config.agent.max_background > 0 and jobs
        if need == SKILLS:
            return ctx.skills is not None and bool(ctx.skills.skills)
        if need == CHANNEL:
            return ctx.channel is not None
        if need == CHAT_LOG:
            return ctx.channel is not None and ctx.channel.log is not None
        if need == SEARCH:
            return ctx.config.web.search in ("searxng", "brave")
        raise ValueError(f"no such need {need!r} (scv/tools/catalog.py NEEDS)")
    return fact


def session_facts(ctx: Any, services: Any) -> Callable[[str], bool]:
    """The facts of a session from its ToolContext and Services (scv/tools/services.py)."""
    return facts(ctx, agents=lambda: services.agents is not None and bool(services.agents.offered),
                 jobs=services.jobs is not None)
