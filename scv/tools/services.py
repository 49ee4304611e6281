"""What a session hands to the tools it offers when it builds its registry: its delegated agents
(offered agents and their conversations) and its background jobs. A command without a session
(`scv tool`) has agents but no jobs; a tool that needs one refuses the call with a sentence."""

from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from scv.config.load import Config
from scv.tools.offering import offered, session_facts

if TYPE_CHECKING:
    from scv.agents.session import AgentSession
    from scv.jobs.manager import Jobs
    from scv.mcp.servers import McpServers


class Services:
    """`agents` may instead be `open_agents`, called when a tool first asks for them: a command
    that runs one `read` never discovers agents."""

    def __init__(self, agents: "AgentSession | None" = None, jobs: "Jobs | None" = None, *,
                 open_agents: "Callable[[], AgentSession] | None" = None, mcp: "McpServers | None" = None):
        self._agents = agents
        self._open_agents = open_agents
        self.jobs = jobs
        self.mcp = mcp          # the MCP servers the session uses as tools (scv/mcp/servers.py)

    @property
    def agents(self) -> "AgentSession | None":
        if self._agents is None and self._open_agents is not None:
            self._agents, self._open_agents = self._open_agents(), None
        return self._agents

    def delegation_offered(self, ctx: Any) -> bool:     # a ToolContext (scv/tools/base.py imports this module)
        """Whether the `agent` tool is on: some agent is offered and the session is not too deep.
        The job tools and the skills section ask this too, without importing the agent tool."""
        return offered("agent", session_facts(ctx, self))

    def close_opened_agents(self) -> None:
        """Closes the agents if they were opened (given, or opened on first use)."""
        if self._agents is not None:
            self._agents.close()


def open_services(config: Config, home: Path, *, auto_approve: bool = False,
                  queue_report: Callable[[Any], None] | None = None, agents: "AgentSession | None" = None,
                  on_settle: Callable[[], None] | None = None) -> Services:
    """A session's collaborators: its agents (discovered now) and, when some agent is offered and
    `agent.max_background` is not 0, its job table (a job is an agent call), whose report turns go
    to `queue_report` (None: a listing, nothing runs). `agents` replaces the discovered ones (a
    test's fake backends)."""
    from scv.agents.session import open_agent_session
    agents = agents if agents is not None else open_agent_session(config, home)
    settings = config.agent
    jobs = None
    if settings.max_background > 0 and agents.offered:
        from scv.jobs.manager import Jobs
        jobs = Jobs(settings.max_background, config.tools.approval_policy, auto_approve,
                    queue_report or (lambda build: None), on_settle=on_settle)
    return Services(agents=agents, jobs=jobs)
