"""`scv batch FILE.jsonl`: runs one `agent` call per input line, on this machine (the local
engine) or across a Ray cluster (`--engine ray`, scv/batch/ray_batch.py, which needs scv[ray])."""

import sys
from pathlib import Path

import click

from scv.batch import progress, tasks
from scv.batch import results as results_module
from scv.batch.drive import drive, open_output
from scv.batch.quota import DEFAULT_BACKOFF, DEFAULT_WAIT, QuotaGate, move_to, parse_fallback
from scv.batch.runner import BatchRunner
from scv.core.errors import EXIT_FAILED, EXIT_OK, EXIT_SIGINT, ScvError, UsageError
from scv.telemetry.start import start_run

LOCAL_MAX_PARALLEL = 64
RAY_ONLY = ("address", "token_file", "schedule_timeout", "retries", "detach", "cancel")


@click.command("batch")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path), required=False)
@click.option("--engine", type=click.Choice(["local", "ray"]), default="local", show_default=True,
              help="Where tasks run: this machine, or the nodes of a Ray cluster (needs scv[ray]).")
@click.option("--parallel", type=click.IntRange(min=1, max=4096), default=None, metavar="N",
              help="Tasks in flight at once (default: agent.max_background locally, the cluster's slots on Ray).")
@click.option("--output", type=click.Path(dir_okay=False, path_type=Path), default=None, metavar="FILE",
              help="Write result lines here; running again with the same file skips completed tasks.")
@click.option("--quiet", is_flag=True, help="Print only the final tally on stderr.")
@click.option("--address", metavar="HEAD:PORT", default=None,
              help="Ray: the cluster's head, or auto (RAY_ADDRESS, else this machine's head); default: a private "
                   "one-machine Ray for this run.")
@click.option("--token-file", type=click.Path(dir_okay=False, path_type=Path), default=None, metavar="FILE",
              help="Ray: the cluster's token (default $SCV_HOME/cluster/token).")
@click.option("--schedule-timeout", type=click.FloatRange(min=1), default=None, metavar="S",
              help="Ray: fail a task that waits longer than S seconds for a slot (default 600).")
@click.option("--retries", type=click.IntRange(min=0, max=10), default=None, metavar="N",
              help="Ray: run a task lost with its node again, up to N times (default 0).")
@click.option("--detach", is_flag=True, help="Ray: the head owns the batch; this command only streams its results "
                                              "and may be stopped and run again to re-attach.")
@click.option("--cancel", is_flag=True, help="Ray: cancel the detached batch of FILE and --output.")
@click.option("--isolate", type=click.Choice(["worktree"]), default=None,
              help="Run every task in its own git worktree on branch scv/<batch>/<id> (a line's isolate wins).")
@click.option("--verify", "verify", multiple=True, metavar="CMD",
              help="A check run after each task's agent, in its folder; repeat for more (a line's verify wins).")
@click.option("--verify-timeout-seconds", type=click.IntRange(min=1), default=None, metavar="S",
              help="Seconds each check may run (default 600; a line's verify_timeout_seconds wins).")
@click.option("--rerun", default=None, metavar="STATUSES",
              help="On resume, run again only tasks with these statuses, such as failed,timeout,lost (default: "
                   "every task not completed).")
@click.option("--report", "report", type=click.Path(dir_okay=False, path_type=Path), default=None, metavar="FILE",
              help="Write the Markdown report (scv batch-report) to FILE when the batch ends.")
@click.option("--quota-wait", type=click.FloatRange(min=0), default=None, metavar="S",
              help="Wait at most S seconds for an agent's usage limit to reset before its task ends `quota` "
                   "(default 21600).")
@click.option("--quota-backoff", type=click.FloatRange(min=0.1), default=None, metavar="S",
              help="Pause an agent whose limit names no reset for S seconds, doubling, 3 tries (default 300).")
@click.option("--fallback", default=None, metavar="AGENTS",
              help="Run a paused agent's tasks on the first of these agents that is free, such as claude,pi "
                   "(without the line's model and effort).")
@click.option("--max-tokens", type=click.IntRange(min=1), default=None, metavar="N",
              help="The whole batch's token limit (input plus output): once reached no task starts (exit status 3).")
@click.option("--max-cost-usd", type=click.FloatRange(min=0, min_open=True), default=None, metavar="USD",
              help="The whole batch's USD limit (reported, or from [prices]): once reached no task starts.")
@click.option("--run-one", is_flag=True, hidden=True, help="Run one task read as JSON on stdin (docs/batch.md).")
@click.option("-C", "--workspace", "workspace", metavar="DIR", default=None,
              help="The workspace (default: the current directory).")
def batch_command(file: Path | None, engine: str, parallel: int | None, output: Path | None, quiet: bool,
                  address: str | None, token_file: Path | None, schedule_timeout: float | None,
                  retries: int | None, detach: bool, cancel: bool, isolate: str | None, verify: tuple[str, ...],
                  verify_timeout_seconds: int | None, rerun: str | None, report: Path | None,
                  quota_wait: float | None, quota_backoff: float | None, fallback: str | None,
                  max_tokens: int | None, max_cost_usd: float | None, run_one: bool, workspace: str | None) -> None:
    """Run a batch of delegated agent calls: FILE has one JSON object per line with an id, a prompt
    and optionally agent, cwd, model, effort, timeout_seconds, and the batch's own isolate, base,
    verify, verify_timeout_seconds and attempts (docs/batch.md).

    Running the command approves its calls; tools.approval_policy "never" refuses them. One
    result line per task goes to --output (or stdout) as each finishes; progress goes to stderr.

    \b
    Exit status:
      0    every task completed (this run or an earlier one with the same --output)
      1    some task failed, was lost, declined, timed out, cancelled, ended `quota` (its agent's
           usage limit outlasted --quota-wait), or had no node for its agent
      2    bad input or configuration (reported with line numbers); nothing started
      3    the batch's --max-tokens or --max-cost-usd was reached: later tasks did not start
      130  interrupted by SIGINT, 143 by SIGTERM; running tasks were cancelled
    """
    if run_one:
        from scv.batch.run_one import main as run_one_main
        sys.exit(run_one_main(workspace))
    try:
        if file is None:
            raise UsageError("name the batch FILE (one JSON object per line)")
        if engine == "ray":
            if isolate or verify or verify_timeout_seconds or report or rerun or max_tokens or max_cost_usd:
                raise UsageError("--isolate, --verify, --verify-timeout-seconds, --rerun, --report, --max-tokens and "
                                 "--max-cost-usd are for the local "
                                 "engine; with --engine ray give isolate and verify as line fields, and run "
                                 "scv batch-report on the output")
            quota = _quota_gate(quota_wait, quota_backoff, fallback)
            if (detach or cancel) and (quota_wait is not None or quota_backoff is not None or fallback):
                raise UsageError("--quota-wait, --quota-backoff and --fallback are not for a detached batch (the "
                                 "head's runner uses their defaults); leave them out with --detach")
            from scv.batch.ray_batch import run_ray_batch
            code = run_ray_batch(file, output=output, parallel=parallel, quiet=quiet, address=address,
                                 token_file=token_file, schedule_timeout=schedule_timeout, retries=retries,
                                 detach=detach, cancel=cancel, workspace=workspace, quota=quota)
        else:
            given = dict(address=address, token_file=token_file, schedule_timeout=schedule_timeout, retries=retries,
                         detach=detach or None, cancel=cancel or None)
            named = [f"--{name.replace('_', '-')}" for name in RAY_ONLY if given[name] is not None]
            if named:
                raise UsageError(f"{', '.join(named)} {'is' if len(named) == 1 else 'are'} for --engine ray; add "
                                 "--engine ray or leave them out")
            code = _local(file, output, parallel, quiet, workspace, isolate, list(verify) or None,
                          verify_timeout_seconds, results_module.parse_rerun(rerun), report,
                          _quota_gate(quota_wait, quota_backoff, fallback), _batch_limits(max_tokens, max_cost_usd))
    except ScvError as err:
        click.echo(f"scv: {err}", err=True)
        code = err.exit_code
    except KeyboardInterrupt:       # Ctrl-C while the input is checked: nothing had started
        code = EXIT_SIGINT
    sys.exit(code)


def _batch_limits(max_tokens: int | None, max_cost_usd: float | None):
    from scv.core.limits import Limits
    return Limits(max_tokens=max_tokens, max_cost_usd=max_cost_usd)


def _local(file: Path, output: Path | None, parallel: int | None, quiet: bool, workspace: str | None,
           isolate: str | None, verify: list[str] | None, verify_timeout_seconds: int | None,
           rerun: frozenset[str] | None, report: Path | None, quota: QuotaGate, limits=None) -> int:
    from scv.batch import results
    from scv.batch.line_options import LineOptions
    from scv.batch.local_engine import AgentCalls, LocalEngine
    from scv.batch.worktree import batch_name
    from scv.session.context import load_context

    limit = parallel or load_context(workspace).config.agent.max_background
    if limit < 1:
        raise UsageError("agent.max_background is 0; pass --parallel N to say how many tasks run at once")
    if limit > LOCAL_MAX_PARALLEL:
        raise UsageError(f"--parallel {limit} is more than the local engine runs at once ({LOCAL_MAX_PARALLEL}); "
                         "pass at most that, or use --engine ray")
    calls = AgentCalls(workspace, limit)
    run = start_run("scv batch", {"scv.batch.engine": "local", "scv.batch.parallel": limit})    # after the supervisor: it starts a thread
    calls.trace = run.span
    code = EXIT_FAILED
    try:
        lines = LineOptions(calls.ctx.workspace, batch_name(output), isolate, verify, verify_timeout_seconds,
                            recorded=results.recorded_bases(output))
        batch = tasks.load(file, calls.prepare, lines.check)
        from scv.batch.limits import BatchLimits, check_batch
        from scv.config.load import prices_of
        check_batch(batch, limits)
        sink, todo, skipped = open_output(output, batch, rerun)
        engine = LocalEngine(calls, limit, batch=lines.batch)
        quota.retarget = lambda task, agent: move_to(task, agent, calls.prepare)
        runner = BatchRunner(engine, todo, sink, progress.choose(sys.stderr, quiet), parallel=limit,
                             prefer=calls.config.agent.prefer, skipped=skipped, quota=quota,
                             limits=BatchLimits(limits, prices_of(calls.config)))
        try:
            code = drive(runner, sink)
        finally:
            engine.close()
        if report is not None:
            from scv.batch import report as reports
            done = {line["id"] for line in sink.written}
            reports.write_file(report, reports.markdown(sink.written, [t.id for t in batch if t.id not in done])
                               .encode())
        return code
    finally:
        calls.close()
        run.span.set({"scv.exit_code": code})
        run.finish(None if code == EXIT_OK else f"exit status {code}")


def _quota_gate(wait: float | None, backoff: float | None, fallback: str | None) -> QuotaGate:
    agents = parse_fallback(fallback)
    if fallback is not None and not agents:
        raise UsageError(f"--fallback {fallback!r} names no agent; pass agent names separated by commas, such as "
                         "claude,pi")
    from scv.core.agents.descriptors import DESCRIPTORS
    unknown = [name for name in agents if name not in DESCRIPTORS]
    if unknown:
        raise UsageError(f"--fallback names {', '.join(unknown)}, which SCV does not know as an agent; choose from "
                         f"{', '.join(DESCRIPTORS)}")
    return QuotaGate(wait=DEFAULT_WAIT if wait is None else wait, backoff=backoff or DEFAULT_BACKOFF,
                     fallback=agents)
