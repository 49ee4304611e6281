"""Executor of `agent` for the one-process-per-turn backend: runs the agent CLI's argument vector
(built and approved on the supervisor side) with a private, cleaned environment, stdin from
/dev/null, parsing its output line by line as it arrives, and returns one structured result.

What only the supervisor needs (the CLI's own session id, the directory, whether the agent
could run at all) travels as the result's typed private part (`AgentPrivate`), never to the model.
"""

import os
import shutil
from typing import Callable

from scv.core.agents.descriptors import DESCRIPTORS
from scv.core.limits import Meter
from scv.core.lines import LineSplitter
from scv.core.messages import AgentPrivate, AgentResult
from workers.agents import tracking
from workers.agents.capture import Head, Tail
from workers.agents.grace import ResultGraceToken
from workers.agents.outcome import decide
from workers.agents.parse_claude import ClaudeStreamParser
from workers.agents.parse_codex import CodexJsonParser
from workers.agents.parse_pi import PiJsonParser
from workers.agents.progress import AgentProgress
from workers.delegated_process import delegated_environment, resolve_cwd
from workers.delegation_records import RecordKeeper
from workers.running import process_runner
from workers.runtime import ToolFailure, WorkerContext
from workers.sandbox_call import SandboxedRun, SandboxError

PARSERS = {"claude-stream": ClaudeStreamParser, "codex-json": CodexJsonParser, "pi-json": PiJsonParser}


def execute(args: dict, ctx: WorkerContext) -> AgentResult:
    agent = args["agent"]
    descriptor = DESCRIPTORS[agent]
    argv = list(args["argv"])
    try:
        cwd = resolve_cwd(ctx.workspace, args.get("cwd"))
    except ValueError as err:
        raise ToolFailure.of(str(err), AgentResult(agent=agent)) from None
    executable = argv[0]
    if not (os.path.isfile(executable) and os.access(executable, os.X_OK)):
        raise ToolFailure.of(f"{agent} cannot run: {executable} is no longer an executable file",
                             AgentResult(agent=agent, private=AgentPrivate(available=False)))
    env, run, keeper = delegated_environment(args, ctx, descriptor, cwd)
    outfile = args.get("outfile")
    if outfile:
        os.makedirs(os.path.dirname(outfile), mode=0o700, exist_ok=True)
    try:
        with SandboxedRun(args.get("sandbox")) as sandbox:
            return _run(args, ctx, descriptor, argv, cwd, sandbox.environment(env), run, keeper, outfile, sandbox)
    except SandboxError as err:
        raise ToolFailure.of(f"{err}; {agent} did not run", AgentResult(agent=agent)) from None
    finally:
        if outfile:
            shutil.rmtree(os.path.dirname(outfile), ignore_errors=True)


def _wake(token: ResultGraceToken, delay: float, due: Callable[[], None]) -> Callable[[], None]:
    """The throttle's timer: the grace token's alarm calls `due` from the run's loop."""
    token.wake_in(delay, due)
    return lambda: None     # a wake-up that finds nothing held sends nothing


def _run(args, ctx, descriptor, argv, cwd, env, run, keeper: RecordKeeper, outfile, sandbox: SandboxedRun) -> AgentResult:
    agent = descriptor.name
    call = ctx.call
    token = ResultGraceToken(ctx.token)
    throttle = AgentProgress(ctx.progress, start_timer=lambda delay, due: _wake(token, delay, due))
    parser_class = PARSERS.get(descriptor.output_format)
    meter = Meter.of(args)
    parser = parser_class(throttle.offer, meter) if parser_class else None
    splitter = LineSplitter(parser.lines) if parser else None
    stdout, stderr = Head(call.output_limit_bytes), Tail(2048)
    pids: list[int] = []

    def on_stdout(chunk: bytes) -> None:
        stdout.feed(chunk)
        if splitter is not None:
            splitter.feed(chunk)
            if parser.report.finished:
                token.arm()
            else:
                token.disarm()
            if parser.report.limited:
                token.stop_for_limit()

    def on_start(pid: int) -> None:
        pids.append(pid)
        tracking.started(keeper, run, pid)

    spec = process_runner.RunSpec(argv=argv, cwd=cwd, env=env, timeout_seconds=call.timeout_seconds,
                                  tag=call.handle, merge_stderr=False, on_start=on_start,
                                  launcher=sandbox.launcher.spawn if sandbox.launcher is not None else None)
    try:
        outcome = process_runner.run(spec, token, on_stdout, stderr.feed)
    except OSError as err:
        raise ToolFailure.of(f"{agent} could not be started: {argv[0]}: {err.strerror}",
                             AgentResult(agent=agent, private=AgentPrivate(available=False))) from None
    finally:
        token.close()
    if pids:
        tracking.ended(keeper, run, pids[0], outcome.exit_code, outcome.signal)
    if splitter is not None:
        splitter.close()
    fallback_reply = None
    if outfile:
        try:
            with open(outfile, encoding="utf-8", errors="replace") as fh:
                fallback_reply = fh.read(call.output_limit_bytes + 4) or None
        except OSError:
            fallback_reply = None
    stopped_after_result = token.expired and not token.inner.cancelled
    decision = decide(agent, outcome, stopped_after_result, parser.report if parser else None,
                      stdout_text=stdout.text(), stdout_cut=stdout.total > call.output_limit_bytes,
                      stderr_text=stderr.text(), fallback_reply=fallback_reply,
                      limit_bytes=call.output_limit_bytes, timeout_seconds=call.timeout_seconds)
    result = AgentResult(
        agent=agent, status=decision.status, reply=decision.reply, usage=parser.report.usage.wire() if parser else None,
        exit_code=outcome.exit_code, stderr_tail=stderr.text(),
        # `truncated` says whether anything was cut: the reply, the error, or stderr's head.
        truncated=decision.truncated or stderr.total > stderr.limit,
        private=AgentPrivate(vendor_session=parser.report.vendor_session if parser is not None else None, cwd=cwd,
                             available=decision.available))
    if decision.hint:
        result.hint = decision.hint
    if decision.status == "failed" and parser is not None and parser.report.rate_limit is not None:
        result.rate_limit = parser.report.rate_limit
    confined = sandbox.field(stderr.text())
    if confined is not None:
        result.sandbox = confined
    if token.limited and meter.hit is not None:
        result.status, result.reply, result.limit = "limit", "", meter.hit.wire()
        raise ToolFailure.of(f"{agent} was stopped: {meter.hit.sentence()}", result)
    if keeper.killed and decision.status != "completed":
        result.status = "cancelled"
        raise ToolFailure.of(f"{agent} was stopped by scv agents kill", result)
    if decision.status in ("completed", "declined"):
        return result
    raise ToolFailure.of(decision.error or f"{agent} failed", result)
