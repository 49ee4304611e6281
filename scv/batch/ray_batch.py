"""`scv batch --engine ray`: the input is checked here as for the local engine (but not against
agents: this machine needs none), then the tasks run on the cluster at `--address` (or `auto`),
or on a private one-machine Ray started for the run when no address is given."""

import os
import sys
from pathlib import Path

from scv.batch import progress, results, tasks
from scv.batch.quota import QuotaGate, move_to
from scv.batch.remote_check import checker
from scv.batch.runner import BatchRunner
from scv.cluster.settings import ClusterError, default_token
from scv.config.load import scv_home
from scv.core.errors import EXIT_FAILED, EXIT_OK, UsageError
from scv.telemetry.settings import passed_on
from scv.telemetry.spans import Run
from scv.telemetry.start import start_run

DEFAULT_SCHEDULE_TIMEOUT = 600.0
REPORT_SECONDS = 2.0


def _address(address: str) -> str:
    if address != "auto":
        return address
    from scv.cluster.node import default_address
    found = default_address(scv_home())
    if found is None:
        raise ClusterError("--address auto found no cluster: RAY_ADDRESS is not set and this machine started or "
                           "joined none (scv cluster head); pass --address HEAD:PORT")
    return found


def run_ray_batch(file: Path, *, output: Path | None, parallel: int | None, quiet: bool, address: str | None,
                  token_file: Path | None, schedule_timeout: float | None, retries: int | None, detach: bool,
                  cancel: bool, workspace: str | None, quota: QuotaGate | None = None) -> int:
    from scv.batch.drive import drive, open_output
    from scv.cluster.connect import require_ray
    from scv.session.context import load_context
    require_ray()
    if (detach or cancel) and (address is None or output is None):
        raise UsageError("--detach and --cancel need --address (the head keeps the batch) and --output (where its "
                         "results go)")
    ctx = load_context(workspace)
    from scv.batch.line_options import LineOptions
    from scv.batch.worktree import batch_name
    lines = LineOptions(ctx.workspace, batch_name(output), recorded=results.recorded_bases(output))
    check = checker(ctx.config)
    batch = tasks.load(file, check, lines.check)
    for task in batch:
        task.batch = lines.batch
    token = token_file or default_token(scv_home())
    if detach or cancel:
        from scv.cluster.connect import client_environment, import_ray
        client_environment(token)       # before ray is imported: Ray reads its auth settings once
        import_ray()
        from scv.batch.ray_detach import attach
        return attach(file, batch, output, _address(address), token, cancel=cancel, quiet=quiet, parallel=parallel,
                      schedule_timeout=schedule_timeout or DEFAULT_SCHEDULE_TIMEOUT, retries=retries or 0,
                      prefer=ctx.config.agent.prefer)
    if output is not None:
        results.completed_lines(output)     # a foreign output file is refused before anything starts
    private = sink = None
    run, code = Run(), EXIT_FAILED
    try:
        if address is None:
            private = _start_private(ctx, parallel)
        else:
            from scv.cluster.connect import connect_driver
            connect_driver(_address(address), token)
        from scv.batch.ray_engine import RayEngine
        run = start_run("scv batch", {"scv.batch.engine": "ray"})
        # Each task's span on its node is a child of this run's: the task carries it, and the
        # variables that make the node's runner export where this process does.
        telemetry = passed_on(os.environ) if run.span.recording else None
        sink, todo, skipped = open_output(output, batch)
        if quota is not None:
            quota.retarget = lambda task, agent: move_to(task, agent, check)
        engine = RayEngine(tick=private.report if private is not None else None, tick_seconds=REPORT_SECONDS,
                           trace=run.span.context, telemetry=telemetry)
        limit = parallel or max(1, sum(engine.capacity().values()))
        run.span.set({"scv.batch.parallel": limit})
        runner = BatchRunner(engine, todo, sink, progress.choose(sys.stderr, quiet), parallel=limit,
                             prefer=ctx.config.agent.prefer, schedule_timeout=schedule_timeout or
                             DEFAULT_SCHEDULE_TIMEOUT, retries=retries or 0, skipped=skipped, quota=quota)
        code = drive(runner, sink)
        return code
    finally:
        try:
            if sink is not None:
                sink.close()
            if private is not None:
                private.stop()
            else:
                _disconnect()
        finally:
            run.span.set({"scv.exit_code": code})
            run.finish(None if code == EXIT_OK else f"exit status {code}")


def _start_private(ctx, parallel: int | None):
    """This machine's agents, each with --parallel (or agent.max_background) slots."""
    from scv.agents.offered import discover
    from scv.cluster.private import PrivateRay
    slots = parallel or ctx.config.agent.max_background
    if slots < 1:
        raise UsageError("agent.max_background is 0; pass --parallel N to say how many tasks run at once")
    offered = list(discover())
    return PrivateRay({agent: slots for agent in offered}, ctx.workspace)


def _disconnect() -> None:
    ray = sys.modules.get("ray")        # None when it was never imported, or could not be
    if ray is not None and ray.is_initialized():
        ray.shutdown()
