"""`scv batch FILE.jsonl`: runs one `agent` call per input line, up to --parallel at once."""

import signal
import sys
import threading
from pathlib import Path

import click
import msgspec

from scv.batch import results, tasks
from scv.agents.session import open_agent_session
from scv.batch.runner import BatchRunner
from scv.calls import ToolRunner
from scv.commands.common import load_context, workspace_option
from scv.config import scv_home
from scv.delegations.startup import start_tracking
from scv.errors import ConfigError, ScvError, UsageError
from scv.stopping import SETTLE_SECONDS
from scv.supervisor import Supervisor
from scv.tools.base import ToolContext
from scv.tools.registry import build_registry, executor_modules
from scv.tools.services import Services

EXIT_ALL_COMPLETED = 0
EXIT_SOME_DID_NOT = 1
EXIT_SIGINT = 130
EXIT_SIGTERM = 143


def _approved(tool: str, risk, summary: str) -> bool:
    # The person who ran `scv batch FILE` asked for exactly these calls.
    return True


@click.command("batch")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--parallel", type=click.IntRange(min=1, max=64), default=None, metavar="N",
              help="Tasks running at once (default agent.max_background).")
@click.option("--output", type=click.Path(dir_okay=False, path_type=Path), default=None, metavar="FILE",
              help="Write result lines here; running again with the same file skips completed tasks.")
@workspace_option
def batch_command(file: Path, parallel: int | None, output: Path | None, workspace: str | None) -> None:
    """Run a batch of delegated agent calls: FILE has one JSON object per line with an id, a prompt
    and optionally agent, cwd, model, effort and timeout_seconds.

    Running the command approves its calls; tools.approval_policy "never" refuses them. One
    result line per task goes to --output (or stdout) as each finishes; progress goes to stderr.

    \b
    Exit status:
      0    every task completed (this run or an earlier one with the same --output)
      1    some task failed, was declined, timed out or was cancelled
      2    bad input or configuration (reported with line numbers); nothing started
      130  interrupted by SIGINT, 143 by SIGTERM; running tasks were cancelled
    """
    ctx = load_context(workspace)
    if ctx.config.tools.approval_policy == "never":
        raise ConfigError("tools.approval_policy is \"never\", which denies agent calls, so scv batch cannot run "
                          "them; set it to \"on-risk\"")
    limit = parallel or ctx.config.agent.max_background
    if limit < 1:
        raise UsageError("agent.max_background is 0; pass --parallel N to say how many tasks run at once")
    if ctx.config.agent.max_conversations < limit:
        # Each running task holds a conversation: the batch keeps as many as it runs at once.
        agent = msgspec.structs.replace(ctx.config.agent, max_conversations=limit)
        ctx = ToolContext(workspace=ctx.workspace, config=msgspec.structs.replace(ctx.config, agent=agent))
    supervisor = Supervisor(preload=executor_modules())     # before any thread
    start_tracking(supervisor)
    agents = open_agent_session(ctx.config, scv_home())
    try:
        registry = build_registry(ctx, Services(agents=agents))
        if "agent" not in registry.names():
            raise UsageError("no agent is offered here (no agent CLI was found, or agent.max_delegation_depth is "
                             "reached), so there is nothing to run the batch on")

        def make_runner() -> ToolRunner:
            return ToolRunner(supervisor, registry, ctx, _approved)

        checker = make_runner()
        batch = tasks.load(file, lambda args: checker.prepare("agent", args))
        kept = results.completed_lines(output) if output is not None else {}
        todo = [task for task in batch if task.id not in kept]
        skipped = len(batch) - len(todo)
        sink = results.ResultSink(output, sys.stdout.buffer)
        sink.open({task_id: line for task_id, line in kept.items()})
        code = _run(make_runner, todo, sink, limit, skipped)
    except ScvError as err:
        click.echo(f"scv: {err}", err=True)
        code = err.exit_code
    except KeyboardInterrupt:       # Ctrl-C while the input is checked: nothing had started
        code = EXIT_SIGINT
    finally:
        # The batch's conversations end with it: their markers go, so gc may collect the transcripts.
        agents.close()
        supervisor.close()
    sys.exit(code)


def _run(make_runner, todo, sink: results.ResultSink, limit: int, skipped: int) -> int:
    progress_lock = threading.Lock()

    def progress(line: str) -> None:
        with progress_lock:
            click.echo(line, err=True)

    runner = BatchRunner(make_runner, todo, sink, limit, progress, skipped=skipped)
    stopped_by: list[int] = []

    def on_signal(signum, frame):
        if not stopped_by:
            stopped_by.append(signum)
            runner.stop()

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, on_signal)
    if skipped:
        progress(f"scv batch: {skipped} task(s) already completed in {sink.path}; running {len(todo)}")
    try:
        runner.run()
        while not runner.wait(0.2):
            if stopped_by:
                runner.wait(SETTLE_SECONDS)
                break
    finally:
        sink.close()
    progress(runner.tally.line() + (" (interrupted)" if stopped_by else ""))
    if stopped_by:
        return EXIT_SIGINT if stopped_by[0] == signal.SIGINT else EXIT_SIGTERM
    return EXIT_ALL_COMPLETED if runner.all_completed else EXIT_SOME_DID_NOT
