"""What both live backends share: one agent process per conversation, started in the call's
directory with the agent's private environment and recorded as a delegation, its record marked
`idle_since_unix` between turns, and the result shape of the CLI adapters.

The arguments of the first call (built and approved on the supervisor side):
`agent`, `argv` (the server's command line, already resolved), `cwd`, `full_permissions`,
`session_id` (the SCV session, for SCV_PARENT), `delegation` (the record's handle), `depth`,
`conversation` (the handle the model sees, such as `claude-1`), `turn`, `prompt`, and optionally
`model` and `effort`. `ctx.options["scv_home"]` names the session's SCV_HOME.
"""

import abc
import os
import time
from typing import Any, Callable

from scv.core.agents.descriptors import DESCRIPTORS, Descriptor
from scv.core.messages import AgentPrivate, AgentResult
from workers.agents.progress import AgentProgress
from workers.delegated_process import delegated_environment, resolve_cwd
from workers.live.process import LiveProcess
from workers.runtime import ToolFailure, WorkerContext
from workers.sandbox_call import SandboxedRun, SandboxError

# After a cancel (or a deadline), how long the agent has to settle its turn and keep the conversation.
SETTLE_SECONDS = 2.0


class Ended(Exception):
    """The call ends with `status` (cancelled, timeout, failed) and the sentence `error`."""

    def __init__(self, status: str, error: str, *, keep: bool, available: bool = True, hint: str | None = None):
        super().__init__(error)
        self.status = status
        self.keep = keep                # the conversation goes on after this call
        self.available = available
        self.hint = hint


class LiveConversation(abc.ABC):
    """The process and record side of a live agent; subclasses speak its protocol."""

    session: str | None = None      # the agent's own session, once its handshake made one

    def __init__(self, args: dict[str, Any], ctx: WorkerContext, extra_env: dict[str, str] | None = None):
        self.name = args["agent"]
        self.descriptor: Descriptor = DESCRIPTORS[self.name]
        self.handle = args.get("conversation") or self.name
        self.limit_bytes = ctx.call.output_limit_bytes
        try:
            self.cwd = resolve_cwd(ctx.workspace, args.get("cwd"))
        except ValueError as err:
            raise ToolFailure.of(str(err), self.blank()) from None
        env, run, keeper = delegated_environment(args, ctx, self.descriptor, self.cwd)
        env.update(extra_env or {})
        argv = list(args["argv"])
        # The first call's sandbox plan confines the process for the whole conversation (later
        # calls' plans cannot change a running process); its private home is writable in it.
        sandbox = SandboxedRun(args.get("sandbox"))
        try:
            sandbox.__enter__()
        except SandboxError as err:
            raise ToolFailure.of(f"{err}; {self.name} did not start", self.blank()) from None
        try:
            self.proc = LiveProcess(argv, self.cwd, sandbox.environment(env), ctx.call.handle, run, keeper, sandbox)
        except SandboxError as err:
            raise ToolFailure.of(f"{err}; {self.name} did not start", self.blank()) from None
        except OSError as err:
            raise ToolFailure.of(f"{self.name} could not be started: {argv[0]}: {err.strerror}",
                                 self.blank(available=False)) from None
        self.depth = args["depth"]
        self.server = os.path.basename(argv[0])      # how messages name it (claude-agent-acp, grok, ...)
        self.turns = 0
        self._wake_due: float | None = None
        self._on_wake: Callable[[], None] | None = None     # the throttle's, when its held line is due
        self._first_deadline: float | None = time.monotonic() + ctx.call.timeout_seconds

    # --- the result shape ----------------------------------------------------------------------

    def blank(self, **private: Any) -> AgentResult:
        """A failed result before the agent said anything (`private`: what the supervisor learns)."""
        return AgentResult(agent=self.name, private=AgentPrivate(**private))

    def result(self, status: str, reply: str, usage, cut: bool) -> AgentResult:
        stderr = self.proc.stderr
        return self.confined(AgentResult(agent=self.name, status=status, reply=reply, usage=usage,
                                         exit_code=self.proc.outcome.exit_code, stderr_tail=stderr.text(),
                                         truncated=cut or stderr.total > stderr.limit,
                                         private=AgentPrivate(cwd=self.cwd, available=True)))

    def confined(self, result: AgentResult) -> AgentResult:
        """The result's `sandbox` entry when the process runs in one, as the CLI runs report it."""
        sandbox = self.proc.sandbox
        entry = sandbox.field(self.proc.stderr.text()) if sandbox is not None else None
        if entry is not None:
            result.sandbox = entry
        return result

    def failure(self, ended: Ended, result: AgentResult) -> ToolFailure:
        """The call's failure; a conversation that cannot go on says so (`conversation_ended`)."""
        result.status, result.exit_code = ended.status, self.proc.outcome.exit_code
        result.stderr_tail = self.proc.stderr.text()
        result.keep_private(available=ended.available)
        if ended.hint:
            result.hint = ended.hint
        if not ended.keep:
            result.keep_private(conversation_ended=True)
        elif self.session is not None:
            result.keep_private(vendor_session=self.session)    # a cancelled first turn keeps its conversation too
        if self.proc.keeper.killed and ended.status != "completed":
            result.status = "cancelled"
            return ToolFailure.of(f"{self.name} was stopped by scv agents kill", result)
        return ToolFailure.of(str(ended), result)

    # --- turns and idleness --------------------------------------------------------------------

    def deadline(self, ctx: WorkerContext) -> float:
        """The first call's clock started when its process did; later calls' when they start."""
        first, self._first_deadline = self._first_deadline, None
        return first if first is not None else time.monotonic() + ctx.call.timeout_seconds

    def throttle(self, ctx: WorkerContext) -> AgentProgress:
        def start_timer(delay: float, due: Callable[[], None]) -> Callable[[], None]:
            at = time.monotonic() + delay
            self._wake_due = at if self._wake_due is None else min(self._wake_due, at)
            self._on_wake = due
            return lambda: None     # a wake-up that finds nothing held sends nothing
        return AgentProgress(ctx.progress, start_timer=start_timer)

    def wait_seconds(self, until: float) -> float:
        """How long one wait may last: until `until`, or sooner when a held progress line is due."""
        now = time.monotonic()
        due = until if self._wake_due is None else min(until, self._wake_due)
        return max(0.0, due - now)

    def woke(self) -> None:
        """Calls the throttle back once its held line is due (the waits end by then)."""
        if self._wake_due is not None and time.monotonic() >= self._wake_due:
            on_wake, self._wake_due, self._on_wake = self._on_wake, None, None
            if on_wake is not None:
                on_wake()

    def begin_turn(self, args: dict[str, Any]) -> None:
        if self.proc.alive:
            # What it did since the last turn, and whether it still runs: a call that arrives as the
            # process exits (scv agents kill) must find it gone, not lose it mid-prompt.
            self.on_idle()
        if not self.proc.alive:
            raise ToolFailure.of(f"{self.handle} cannot continue: its server exited ({self.proc.exit_text()}); "
                                 "start a new conversation (omit session)",
                                 self.blank(available=False, conversation_ended=True))
        self.turns += 1
        self.proc.keeper.killed = False
        # IDLE -> RUNNING
        self.proc.update_record(turn=args.get("turn"), idle_since_unix=None)

    def end_turn(self) -> None:
        if self.proc.alive:
            # RUNNING -> IDLE
            self.proc.update_record(idle_since_unix=time.time())

    def idle_fds(self) -> list[int]:
        return self.proc.fds() if self.proc.alive else []

    @abc.abstractmethod
    def open(self, args: dict[str, Any], ctx: WorkerContext) -> None:
        """The handshake, within the first call's deadline; Ended when the agent cannot serve."""

    @abc.abstractmethod
    def queued(self) -> bytearray:
        """The lines waiting for the process's stdin."""

    @abc.abstractmethod
    def idle_output(self, chunks: list[bytes], closing: bool) -> None:
        """What the process printed between calls (`closing`: its stdout ended)."""

    def on_idle(self) -> bool:
        """Output between calls; False once the process is gone."""
        return self.proc.pump_idle(self.queued(), self.idle_output)

    def close(self) -> None:
        """The conversation ended: stdin closed, 2 s of grace, then the group and everything tagged."""
        self.proc.shutdown()


def opened(agent: LiveConversation, args: dict[str, Any], ctx: WorkerContext) -> LiveConversation:
    """The agent after its handshake. A start that fails keeps nothing: its process is stopped and
    the call fails with the reason (a conversation exists only once its first call is served)."""
    try:
        agent.open(args, ctx)
    except Ended as ended:
        agent.proc.shutdown()
        ended.keep = False
        raise agent.failure(ended, agent.blank(cwd=agent.cwd)) from None
    except BaseException:
        agent.proc.shutdown()
        raise
    return agent
