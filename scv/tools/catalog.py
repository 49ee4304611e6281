"""Every built-in tool by name: where its spec lives and the worker module that runs it. Plain
data that imports nothing, so a command can start its fork point, preloading the one executor
it needs, before it loads any spec (tests/test_conformance.py checks it against the specs)."""

# name -> ("module:Class" of the spec, executor module), in the order a session offers them.
BUILTIN_SPECS: dict[str, tuple[str, str]] = {
    "read": ("scv.tools.read:ReadTool", "workers.read"),
    "write": ("scv.tools.write:WriteTool", "workers.write"),
    "bash": ("scv.tools.bash:BashTool", "workers.bash"),
    "web_fetch": ("scv.tools.web_fetch:WebFetchTool", "workers.web_fetch"),
    "web_search": ("scv.tools.web_search:WebSearchTool", "workers.web_search"),
    "agent": ("scv.tools.agent.tool:AgentTool", "workers.agent"),
    "agent_wait": ("scv.tools.agent_wait:AgentWaitTool", "workers.agent_wait"),
    "agent_status": ("scv.tools.agent_status:AgentStatusTool", "workers.agent_status"),
    "agent_cancel": ("scv.tools.agent_cancel:AgentCancelTool", "workers.agent_cancel"),
    "read_skill": ("scv.tools.read_skill:ReadSkillTool", "workers.read_skill"),
    "chat_attach": ("scv.tools.chat_attach:ChatAttachTool", "workers.chat_attach"),
    "chat_history": ("scv.tools.chat_history:ChatHistoryTool", "workers.chat_history"),
    "chat_keep": ("scv.tools.chat_keep:ChatKeepTool", "workers.chat_keep"),
}
# What `scv tools` lists of each (its declared risk, its description's first sentence), so listing
# imports no spec; tests/test_conformance.py checks both against the specs.
LISTING: dict[str, tuple[str, str]] = {
    "read": ("read_only",
             'Read a UTF-8 text file in the workspace, optionally a byte range of it'),
    "write": ("filesystem",
             'Write a whole UTF-8 file in the workspace, atomically'),
    "bash": ("process",
             'Run a shell command with /bin/bash -lc in the workspace, stdin empty'),
    "web_fetch": ("network",
             'Fetch one public http or https URL with GET and return it as text: HTML becomes readable plain text '
             'with numbered link references and the links listed at the end; JSON and other text pass through; '
             'binary types are refused'),
    "web_search": ("read_only",
             'Search the web with the search service the user configured and return up to `count` results, each '
             'with a title, URL and snippet'),
    "agent": ("delegate",
             'Hand a task to another coding agent (a delegated CLI such as Claude Code or Codex) and get one '
             'result: agent, status (completed, failed, declined, timeout, cancelled, limit), reply, usage, exit_code, '
             'stderr_tail, truncated, plus error, hint, note, fallback, rate_limit, limit, session and turn when they apply'),
    "agent_wait": ("read_only",
             'Wait until a background agent job finishes (or the timeout passes) and return it: job, agent, '
             'status, elapsed_seconds and result, or status running with its latest progress'),
    "agent_status": ("read_only",
             'Describe one background agent job (job), or every job this session remembers: running ones with '
             'their latest progress, finished ones with their result.'),
    "agent_cancel": ("process",
             'Stop a running background agent job: its agent and every process it started are stopped'),
    "read_skill": ("read_only",
             "Read a skill's instructions (its SKILL.md) by the name the system prompt lists"),
    "chat_attach": ("network",
             'Send a file to the user in this chat, after your reply text: images (PNG, JPEG, GIF, WebP, BMP) '
             'arrive as pictures, video as video, anything else as a file'),
    "chat_history": ("read_only",
             "Search and read this chat's earlier messages, one conversation's log: action search (every word of "
             "query, newest first), episodes (newest first; before/after as YYYY-MM-DD) or read (an episode's "
             'messages from offset, with total)'),
    "chat_keep": ("filesystem",
             'Keep a file the user sent in this chat for good: it moves from the chat media, whose files expire, '
             "to this conversation's kept files, never replacing another file"),
}
# What a session must have for it to offer the tool (scv/tools/offering.py); none: always offered.
NEEDS: dict[str, tuple[str, ...]] = {
    "web_search": ("search",),
    "agent": ("agents",),
    "agent_wait": ("agents", "jobs"),
    "agent_status": ("agents", "jobs"),
    "agent_cancel": ("agents", "jobs"),
    "read_skill": ("skills",),
    "chat_attach": ("channel",),
    "chat_history": ("channel", "chat_log"),
    "chat_keep": ("channel", "chat_log"),
}
# The tools of the MCP servers a session uses (docs/mcp.md): one spec class, one instance per
# offered tool (named mcp__<server>__<tool>), all run by one executor in the server's live worker.
MCP_SPEC = ("scv.tools.mcp:McpTool", "workers.mcp")
# What a worker needs beside the executors: the live worker's loop (a session's agent tool).
WORKER_MODULES = ("workers.live_runtime",)


def executor_module(name: str) -> list[str]:
    """What a fork point that runs only the tool `name` preloads ([] for no such built-in tool)."""
    return [BUILTIN_SPECS[name][1]] if name in BUILTIN_SPECS else []
