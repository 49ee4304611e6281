"""The run of `scv exec PROMPT`: one headless session in the workspace, the final reply on stdout.
(scv/commands/exec.py declares the command for click; SIGNATURE is the same for the plain reading.)

The supervisor is created first, before any thread. The turn runs in its own thread so the
main thread stays free for signals and the deadline: SIGINT, SIGTERM or `--timeout` cancel the
turn, which cancels the running tool call and stops its processes; the process exits once
that call has ended (at most the supervisor's cancel bound).
"""

import select
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, NoReturn

import msgspec

from scv.core import events as ev
from scv.core.cancellation import Cancellation
from scv.core.errors import (EXIT_FAILED, EXIT_LIMIT, EXIT_OK, EXIT_SCHEMA_INVALID, EXIT_TIMEOUT, EXIT_USAGE, RefusedError, ScvError,
                             UsageError, interrupted_exit)
from scv.core.limits import usage_line
from scv.core.risk import Risk
from scv.core.signals import on_stop_signals
from scv.core.stopping import SETTLE_SECONDS
from scv.lifecycle import say
from scv.plain_argv import Option, Signature, file_path, positive_float, positive_int, text
from scv.providers.factory import build_provider
from scv.session.context import load_context
from scv.session.session import Session
from scv.session.turn_loop import Phase
from scv.supervision.approval import terminal_approver
from scv.supervision.supervisor import Supervisor
from scv.telemetry.start import start_run
from scv.tools.registry import executor_modules, load_call_modules


OTHER_STOP_WAIT = 1.0                   # waiting on the model or a person: nothing to stop

# scv/commands/exec.py's parameters, for scv/entry.py (tests/test_plain_argv.py checks
# they are click's).
SIGNATURE = Signature(arguments=("prompt",), required=0, options=(
    Option("script", ("--script",), file_path),
    Option("as_json", ("--json",)),
    Option("timeout", ("--timeout",), positive_float),
    Option("model", ("--model",), text),
    Option("auto_approve", ("--auto-approve",)),
    Option("output_schema", ("--output-schema",), file_path),
    Option("mcp_config", ("--mcp-config",), file_path),
    Option("max_turns", ("--max-turns",), positive_int),
    Option("max_tokens", ("--max-tokens",), positive_int),
    Option("max_cost_usd", ("--max-cost-usd",), positive_float),
    Option("workspace", ("-C", "--workspace"), text),
))


class Output:
    """Events as JSON lines (--json), or a short log on stderr and the reply on stdout."""

    def __init__(self, as_json: bool, structured: bool = False):
        self.as_json = as_json
        self.structured = structured     # --output-schema: stdout holds only the validated document
        self._lock = threading.Lock()

    def emit(self, name: str, params: dict[str, Any]) -> None:
        with self._lock:
            if self.as_json:
                sys.stdout.buffer.write(msgspec.json.encode({"type": name, **params}) + b"\n")
                sys.stdout.flush()
                if name == ev.TURN_FAILED:
                    say(f"scv: {params['error']}", err=True)
                return
            if name == ev.TOOL_STARTED:
                what = params.get("summary") or params["arguments"]
                say(f"scv: {params['tool']}: {what[:157] + '...' if len(what) > 160 else what}", err=True)
            elif name == ev.TOOL_COMPLETED and not params["ok"]:
                say(f"scv:   failed: {params['result'].get('error', '')}", err=True)
            elif name == ev.TURN_COMPLETED and "limit" in params:
                pass                    # stopped by a limit: no reply; the exit status and stderr say which
            elif name == ev.TURN_COMPLETED and not self.structured:
                say(params["reply"])
            elif name == ev.TURN_COMPLETED and "structured" in params:
                from scv.structured import compact
                say(compact(params["structured"]))
            elif name == ev.TURN_COMPLETED:
                say(f"scv: {params['reply']}", err=True)    # an earlier turn's reply: not the document
            elif name == ev.TURN_FAILED:
                say(f"scv: {params['error']}", err=True)
                if params.get("reason") == "schema_invalid":
                    say(f"scv: the last reply was:\n{params['reply']}", err=True)

    def error(self, err: ScvError) -> None:
        if self.as_json:
            self.emit("error", {"error": str(err)})
        say(f"scv: {err}", err=True)


def _asker(prompt_from_stdin: bool):
    """A terminal asks y/N; anything else is denied at once with the way to allow it."""
    if sys.stdin.isatty() and not prompt_from_stdin:
        ask_terminal = terminal_approver()
        return lambda request_id, tool, risk, summary, cancel: ask_terminal(tool, risk, summary, cancel)

    def no_terminal(request_id: str, tool: str, risk: Risk, summary: str, cancel: Cancellation) -> bool:
        raise RefusedError(f"{tool} needs approval ({risk.value} risk) and there is no terminal to ask, so it was "
                           "denied; run scv exec again with --auto-approve to allow it")
    return no_terminal


def run_exec(prompt: str | None, script: Path | None, as_json: bool, timeout: float | None, model: str | None,
             auto_approve: bool, output_schema: Path | None, mcp_config: Path | None, max_turns: int | None,
             max_tokens: int | None, max_cost_usd: float | None, workspace: str | None) -> NoReturn:
    """The run of `scv exec` with its parameters read (scv/commands/exec.py says each)."""
    out = Output(as_json, structured=output_schema is not None)
    schema = None
    try:
        if output_schema is not None:
            schema = _schema(output_schema)
        prompt_from_stdin = prompt == "-"
        if prompt_from_stdin:
            prompt = sys.stdin.read()
        if not prompt or not prompt.strip():
            if script is None:
                raise UsageError("no prompt given; pass the task as an argument, or - to read it from stdin")
            prompt = f"Run the script {script.name}."
        ctx = load_context(workspace)
        provider = build_provider(ctx.config, script=script, model=model)
        mcp_servers = None
        if ctx.config.mcp_servers or mcp_config is not None:
            from scv.config.load import user_config_path
            from scv.config.mcp import servers
            mcp_servers = servers(ctx.config.mcp_servers, mcp_config, str(user_config_path()))
        limits = _limits(ctx.config, provider.model, max_turns, max_tokens, max_cost_usd)
    except ScvError as err:
        out.error(err)
        sys.exit(EXIT_USAGE if err.exit_code == 2 else err.exit_code)
    # Before any thread. The fork point's preload and the delegation bookkeeping wait until the
    # first model request is on its way: the start-up up to that request has the machine to itself.
    supervisor = Supervisor(preload=executor_modules(), gated=True)
    sent = Cancellation()       # readable once the first request is written (at once for a script)
    provider.when_sent(sent.cancel)
    run = start_run("scv exec", {"scv.provider": provider.name})     # after the supervisor: it starts a thread
    code = EXIT_FAILED
    try:
        instruction = None
        if schema is not None:
            from scv.structured import instruction as schema_instruction
            instruction = schema_instruction(schema)
        mcp = None
        if mcp_servers:
            from scv.mcp.servers import LiveMcpServers
            mcp = LiveMcpServers(supervisor, mcp_servers, ctx, out.emit, trace=run.span)
        try:
            session = Session(supervisor, ctx, provider, emit=out.emit, asker=_asker(prompt_from_stdin),
                              auto_approve=auto_approve, output_instruction=instruction, trace=run.span, mcp=mcp,
                              limits=limits)
        except ScvError as err:     # a required MCP server did not start: the model never ran
            out.error(err)
            code = EXIT_USAGE if err.exit_code == 2 else err.exit_code
        else:
            code = _run(session, prompt, timeout, sent, lambda: _deferred_start(supervisor, session), schema)
            say(f"scv: {usage_line(session.budget.used())}", err=True)
    finally:
        supervisor.close()
        run.span.set({"scv.exit_code": code})
        run.finish(None if code == EXIT_OK else f"exit status {code}")
    sys.exit(code)


def _limits(config, model: str, max_turns: int | None, max_tokens: int | None, max_cost_usd: float | None):
    """The run's limits (the command's, lowered by none: the config's are joined by the session);
    a USD limit needs a cost: SCV's own model responses are priced from [prices] only."""
    from scv.config.load import prices_of, run_limits
    from scv.core.limits import Limits, own_cost_refusal, smaller
    limits = Limits(max_turns=max_turns, max_tokens=max_tokens, max_cost_usd=max_cost_usd)
    why = own_cost_refusal(smaller(run_limits(config), limits), model, prices_of(config))
    if why is not None:
        raise UsageError(why)
    return limits


def _schema(path: Path) -> dict[str, Any]:
    if str(path) == "-":
        raise UsageError("--output-schema - is not allowed (stdin may carry the prompt); give the schema's file")
    from scv.structured import SchemaError, load_schema
    try:
        return load_schema(path)
    except SchemaError as err:
        raise UsageError(str(err)) from None


def _check(session: Session, schema: dict[str, Any] | None):
    """The reply check of a structured run: only the last turn's reply, once no background work
    will queue another turn, is the one validated and printed."""
    if schema is None:
        return None
    from scv.structured import check_reply
    limit = session.config.tools.output_limit_bytes
    return lambda reply: None if session.held() else check_reply(schema, reply, limit)


def _deferred_start(supervisor: Supervisor, session: Session) -> None:
    """Main thread, once the first request is out: become the subreaper of delegated agents'
    leftovers and reconcile an earlier process's orphans, let the fork point preload, and load
    what the offered tools' calls need. A tool call comes after the model's reply, so this is
    done before one runs."""
    from scv.delegations.startup import start_tracking
    start_tracking(supervisor)
    supervisor.release()
    load_call_modules(session.registry)


def _run(session: Session, prompt: str, timeout: float | None, sent: Cancellation,
         deferred_start: Callable[[], None], schema: dict[str, Any] | None = None) -> int:
    check = _check(session, schema)
    cancel = Cancellation()
    stopped_by: list[int] = []

    def on_signal(signum: int) -> None:
        if not stopped_by:
            stopped_by.append(signum)
            session.cancel_reason = "interrupted"
            cancel.cancel()

    with on_stop_signals(on_signal):
        return _run_turns(session, prompt, timeout, cancel, stopped_by, sent, deferred_start, check)


def _run_turns(session: Session, prompt: str, timeout: float | None, cancel: Cancellation,
               stopped_by: list[int], sent: Cancellation, deferred_start: Callable[[], None], check) -> int:
    outcomes = []
    done = Cancellation()       # readable once the turns are over

    def turns() -> None:
        try:
            outcomes.append(session.run_turn(prompt, cancel=cancel, check=check))
            # Turns the session starts on its own (background reports) until nothing is outstanding.
            while not cancel.cancelled and session.held():
                queued = session.next_queued()
                if queued is None:
                    session.wait_for_work(cancel)
                    continue
                outcomes.append(session.run_turn(queued.prompt, cancel=cancel, origin=queued.origin, check=check))
        finally:
            done.cancel()

    worker = threading.Thread(target=turns, name="scv-turn", daemon=True)
    worker.start()
    deadline = None if timeout is None else time.monotonic() + timeout
    timed_out = False

    # The turns end, a signal cancels (its handler writes to `cancel`), or the deadline passes;
    # the first request going out (or any of those) starts the deferred start-up work first.
    def wait(*bells: Cancellation) -> None:
        left = None if deadline is None else max(0.0, deadline - time.monotonic())
        select.select([bell.fileno() for bell in bells], [], [], left)

    wait(sent, done, cancel)
    deferred_start()
    wait(done, cancel)
    if not done.cancelled and not stopped_by and deadline is not None and time.monotonic() >= deadline:
        timed_out = True
        session.cancel_reason = "timeout"
        cancel.cancel()
    if not done.cancelled:
        # Cancelled: wait for a running tool call to stop its processes; a turn that waits on the
        # model or a person has nothing running and is abandoned (its thread is a daemon).
        settle = SETTLE_SECONDS if session.phase is Phase.TOOL else OTHER_STOP_WAIT
        select.select([done.fileno()], [], [], settle)
    session.close()
    if stopped_by:
        return interrupted_exit(stopped_by[0])
    if timed_out:
        return EXIT_TIMEOUT
    if outcomes and outcomes[-1].reason == "schema_invalid":
        return EXIT_SCHEMA_INVALID
    hit = next((o.limit for o in outcomes if o.status == "limit"), None)
    if hit is not None:
        say(f"scv: stopped: {hit.sentence()} (limit {hit.kind}); the conversation is kept", err=True)
        return EXIT_LIMIT
    return EXIT_OK if outcomes and all(o.status == "completed" for o in outcomes) else EXIT_FAILED
