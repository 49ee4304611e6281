"""`scv server --stdio`: SCV's client protocol on stdin/stdout (docs/protocol.md)."""

import sys
from pathlib import Path

import click

from scv.core.errors import UsageError
from scv.delegations.startup import start_tracking
from scv.protocol.server import StdioServer
from scv.providers.script import load_script
from scv.supervision.supervisor import Supervisor
from scv.telemetry.start import start_run
from scv.tools.registry import executor_modules


@click.command("server")
@click.option("--stdio", is_flag=True, help="Speak newline-delimited JSON-RPC 2.0 on stdin and stdout.")
@click.option("--script", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Every session runs offline on this JSONL script of the model's turns.")
def server_command(stdio: bool, script: Path | None) -> None:
    """Serve one client over the SCV protocol until it closes stdin.

    Exit status: 0 after the client closed stdin (or SIGINT/SIGTERM), with any running turn
    cancelled and its processes stopped; 2 for bad usage.
    """
    if not stdio:
        raise UsageError("scv server needs --stdio (the only transport); run scv server --stdio")
    if script is not None:
        load_script(script)     # a broken script is a usage error now, not at session.start
    supervisor = Supervisor(preload=executor_modules())     # before any thread
    start_tracking(supervisor)
    run = start_run("scv server")       # after the supervisor: tracing starts a thread
    try:
        code = StdioServer(supervisor, sys.stdin.buffer, sys.stdout.buffer, script=script, trace=run.span).serve()
    finally:
        supervisor.close()
        run.finish()
    sys.exit(code)
