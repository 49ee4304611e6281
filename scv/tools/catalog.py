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
# What a worker needs beside the executors: the live worker's loop (a session's agent tool).
WORKER_MODULES = ("workers.live_runtime",)


def executor_module(name: str) -> list[str]:
    """What a fork point that runs only the tool `name` preloads ([] for no such built-in tool)."""
    return [BUILTIN_SPECS[name][1]] if name in BUILTIN_SPECS else []
