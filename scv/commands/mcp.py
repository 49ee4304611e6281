"""`scv mcp`: SCV as a Model Context Protocol server on stdin/stdout (docs/mcp.md)."""

import json
import os
import shutil
import sys
from pathlib import Path

import click

from scv.core.errors import UsageError
from scv.delegations.startup import start_tracking
from scv.supervision.supervisor import Supervisor
from scv.tools.registry import executor_modules

HOSTS = ("claude", "codex", "gemini")


@click.command("mcp")
@click.option("-C", "workspace", default=None, help="The session's workspace (default: the current folder).")
@click.option("--tools", "tools", default="", help="Also offer these built-in tools, comma-separated: "
                                                   "read,write,bash,web_fetch.")
@click.option("--auto-approve", is_flag=True, help="Approve what the policy asks about without asking the "
                                                    "host; without it the host is asked through elicitation, "
                                                    "or, when it cannot be, it is denied.")
@click.option("--print-config", "host", default=None, help="Print the snippet that registers scv mcp with this "
                                                           "host (claude, codex or gemini) and exit.")
def mcp_command(workspace: str | None, tools: str, auto_approve: bool, host: str | None) -> None:
    """Serve SCV's agent tools to one MCP host over stdio until it closes stdin.

    Exit status: 0 after the host closed stdin (or SIGINT/SIGTERM), with every call in flight
    cancelled and its processes stopped; 2 for bad usage.
    """
    if host is not None:
        print(config_snippet(host))
        return
    from scv.protocol.mcp_server import OPTIONAL_TOOLS, McpServer
    from scv.protocol.mcp_spans import TRANSPORT
    from scv.telemetry.start import start_run
    wanted = tuple(t.strip() for t in tools.split(",") if t.strip())
    unknown = [t for t in wanted if t not in OPTIONAL_TOOLS]
    if unknown:
        raise UsageError(f"--tools takes {','.join(OPTIONAL_TOOLS)}, not {','.join(unknown)}; name those or omit "
                         "--tools")
    supervisor = Supervisor(preload=executor_modules())     # before any thread
    start_tracking(supervisor)
    run = start_run("scv mcp", TRANSPORT)       # after the supervisor: tracing starts a thread
    code = 1
    try:
        server = McpServer(supervisor, sys.stdin.buffer, sys.stdout.buffer, workspace=workspace, tools=wanted,
                           auto_approve=auto_approve, trace=run.span)
        code = server.serve()
    finally:
        try:
            supervisor.close()
        finally:
            run.finish(None if code == 0 else f"exit status {code}")
    sys.exit(code)


def config_snippet(host: str) -> str:
    if host not in HOSTS:
        raise UsageError(f"--print-config takes claude, codex or gemini, not {host!r}")
    command = scv_command()
    if host == "codex":
        return f"[mcp_servers.scv]\ncommand = {json.dumps(command)}\nargs = [\"mcp\"]"
    return json.dumps({"mcpServers": {"scv": {"command": command, "args": ["mcp"]}}}, indent=2)


def scv_command() -> str:
    """The absolute path that starts this SCV: the console script beside its Python (an installed
    SCV), else the checkout's bin/scv, else the `scv` on PATH."""
    import scv
    for candidate in (Path(sys.executable).parent / "scv", Path(scv.__file__).resolve().parent.parent / "bin" / "scv"):
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    found = shutil.which("scv")
    if found is None:
        raise UsageError("no scv program was found to register (not beside Python, not on PATH); install SCV "
                         "with pip or run this from its checkout's bin/scv")
    return str(Path(found).resolve())
