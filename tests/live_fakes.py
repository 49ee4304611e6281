"""A harness for live agents (workers/live/) without the live worker runtime: a WorkerContext-like
object with a real cancellation token (a pipe the test writes a Cancel frame into), a list of
progress lines and an `ask` callback, plus fake ACP servers and a fake `scv server --stdio`
installed in a fake user's ~/.local/bin through the committed launcher (tests/agent_fakes.py)."""

import json
import os
import secrets
import shlex
import signal
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import pytest

from scv.core.frames import frame
from scv.core.messages import Call, Cancel, encode
from tests.agent_fakes import FakeAgent, install
from workers.running.cancel_token import CancelToken

ROOT = Path(__file__).resolve().parent.parent
PEER = ROOT / "tests" / "acp_peer.py"


@dataclass
class Ask:
    tool: str
    risk: str
    summary: str


@dataclass
class HarnessContext:
    """What a live agent's `start`/`turn` use of a WorkerContext, for one call."""
    call: Call
    token: CancelToken
    cancel_fd: int
    answer: Callable[[Ask], bool] = lambda ask: False       # the approval gate: False = denied or none
    lines: list[str] = field(default_factory=list)
    asked: list[Ask] = field(default_factory=list)

    @property
    def workspace(self) -> str:
        return self.call.workspace

    @property
    def options(self) -> dict[str, Any]:
        return self.call.options

    def progress(self, line: str) -> None:
        self.lines.append(line[:500])

    def ask(self, tool: str, risk: str, summary: str) -> bool:
        request = Ask(tool, risk, summary)
        self.asked.append(request)
        return bool(self.answer(request))

    def cancel(self) -> None:
        os.write(self.cancel_fd, frame(encode(Cancel())))

    def cancel_in(self, seconds: float) -> threading.Timer:
        """Cancels from another thread after `seconds` (the call is blocked in the agent then)."""
        timer = threading.Timer(seconds, self.cancel)
        timer.daemon = True
        timer.start()
        return timer


class Harness:
    """Builds one context per call, as the runtime would, and closes their pipes afterwards."""

    def __init__(self, workspace: Path, scv_home: Path):
        self.workspace = workspace
        self.scv_home = scv_home
        self.calls = 0
        # Unique per harness: the processes a run starts are found (and stopped) by this instance
        # in their SCV_PARENT link, so two suites running at once must never share it.
        self.instance = f"inst-{os.getpid()}-{secrets.token_hex(4)}"
        self._fds: list[int] = []
        self._previous_term = signal.getsignal(signal.SIGTERM)

    def context(self, args: dict[str, Any], *, timeout: float = 60.0, limit: int = 65536,
                answer: Callable[[Ask], bool] | None = None) -> HarnessContext:
        self.calls += 1
        read_fd, write_fd = os.pipe2(os.O_CLOEXEC)
        os.set_blocking(read_fd, False)
        self._fds += [read_fd, write_fd]
        call = Call(tool="agent", executor="workers.live.acp:start", args=args, workspace=str(self.workspace),
                    handle=f"{self.instance}/call-{self.calls}", timeout_seconds=timeout, output_limit_bytes=limit,
                    options={"scv_home": str(self.scv_home)})
        ctx = HarnessContext(call, CancelToken(read_fd), write_fd)
        if answer is not None:
            ctx.answer = answer
        return ctx

    def tagged(self, fragment: str) -> list:
        """Live processes of this harness's runs whose SCV_PARENT link holds `fragment`."""
        from tests.delegation_fakes import tagged_with
        return tagged_with(f"{self.instance}/{fragment}")

    def close(self) -> None:
        for fd in self._fds:
            try:
                os.close(fd)
            except OSError:
                pass
        signal.signal(signal.SIGTERM, self._previous_term)


def acp_args(agent: str, server: Path | str, prompt: str, *, turn: int = 1, **extra: Any) -> dict[str, Any]:
    server_argv = [str(server)] + list(extra.pop("server_args", []))
    args = {"agent": agent, "argv": server_argv, "cwd": None, "full_permissions": False, "session_id": "s-test",
            "delegation": f"{agent}-a1b2c3", "depth": 1, "conversation": f"{agent}-1", "turn": turn,
            "prompt": prompt}
    args.update(extra)
    return args


@dataclass
class FakeServer:
    """A fake ACP server (or nested scv) in the fake user's ~/.local/bin, and what it logged."""
    agent: FakeAgent
    log: Path

    @property
    def executable(self) -> Path:
        return self.agent.executable

    def events(self, name: str | None = None) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        found = [json.loads(line) for line in self.log.read_text().splitlines() if line.strip()]
        return [e for e in found if name is None or e["event"] == name]


def install_peer(user_home: Path, log_dir: Path, name: str = "claude-agent-acp", *flags: str) -> FakeServer:
    """The scripted ACP peer (tests/acp_peer.py) behind an executable called `name`."""
    agent = install(user_home / ".local" / "bin", name, log_dir)
    events = log_dir / "peer-events.jsonl"
    q = shlex.quote
    agent.write(f"exec {q(sys.executable)} {q(str(PEER))} --log {q(str(events))} "
                f"{' '.join(q(f) for f in flags)} \"$@\"\n")
    return FakeServer(agent, events)


# A bash stand-in for `scv server --stdio`: helpers that read one request (its method and id,
# logged to requests.jsonl) and print responses and notifications; a scenario is bash using them.
NESTED_HELPERS = r'''
next() {
  IFS= read -r LINE || { if declare -F on_eof >/dev/null; then on_eof; fi; exit 0; }
  printf '%s\n' "$LINE" >> "$LOG"
  METHOD=$(sed -n 's/.*"method":"\([^"]*\)".*/\1/p' <<<"$LINE")
  ID=$(sed -n 's/^{"jsonrpc":"2.0","id":\([0-9]*\),.*/\1/p' <<<"$LINE")
}
reply() { printf '{"jsonrpc":"2.0","id":%s,"result":%s}\n' "$ID" "$1"; }
# A message built by emit() in Python: @T@ becomes the current turn id ($T), @PID@ this process,
# @R@ whatever the scenario put in $R.
R=""
out() { local l=$1; l=${l//@T@/$T}; l=${l//@PID@/$$}; l=${l//@R@/$R}; printf '%s\n' "$l"; }
refuse() { printf '{"jsonrpc":"2.0","id":%s,"error":{"code":-32000,"message":"%s"}}\n' "$ID" "$1"; }
note() { printf '{"jsonrpc":"2.0","method":"%s","params":%s}\n' "$1" "$2"; }
handshake() {
  next; reply '{"protocol_version":3,"server":{"name":"scv","version":"0.0-standin"}}'
  next; reply '{"session_id":"session-standin","workspace":"/","provider":"fake","model":"m","tools":["bash"]}'
}
'''


def install_nested(user_home: Path, log_dir: Path, scenario: str) -> FakeServer:
    """The bash stand-in as `scv` in the fake user's ~/.local/bin; `scenario` is its bash body."""
    agent = install(user_home / ".local" / "bin", "scv", log_dir)
    requests = log_dir / "requests.jsonl"
    agent.write(f"LOG={shlex.quote(str(requests))}\n{NESTED_HELPERS}\n{scenario}\n")
    return FakeServer(agent, requests)


def nested_requests(server: FakeServer) -> list[dict[str, Any]]:
    if not server.log.exists():
        return []
    return [json.loads(line) for line in server.log.read_text().splitlines() if line.strip()]


def completed_calls(client) -> dict[str, dict]:
    """What each `agent` call of a stdio session returned, by call id."""
    return {c["call_id"]: c["result"] for c in client.notifications("tool.completed")}


def emit(method: str, **params: Any) -> str:
    """A bash line printing one notification of the nested protocol (see NESTED_HELPERS' out)."""
    return "out " + shlex.quote(json.dumps({"jsonrpc": "2.0", "method": method, "params": params}))


ACP_CAPTURES = ROOT / "tests" / "fixtures" / "acp"
REPLAY = ROOT / "tests" / "acp_replay.py"


def install_replay(user_home: Path, log_dir: Path, agent: str, capture: str, name: str) -> FakeServer:
    """A fake ACP server `name` that replays the captured transcript `<agent>/<capture>`."""
    fake = install(user_home / ".local" / "bin", name, log_dir)
    events = log_dir / "replay.jsonl"
    q = shlex.quote
    transcript = ACP_CAPTURES / agent / f"{capture}.transcript.jsonl"
    fake.write(f"exec {q(sys.executable)} {q(str(REPLAY))} {q(str(transcript))} --log {q(str(events))}\n")
    return FakeServer(fake, events)


def transcript_updates(agent: str, capture: str) -> list[bytes]:
    """The raw params of every `session/update` the captured agent sent."""
    found = []
    for line in (ACP_CAPTURES / agent / f"{capture}.transcript.jsonl").read_text().splitlines():
        message = json.loads(line)["msg"]
        if message.get("method") == "session/update":
            found.append(json.dumps(message["params"]).encode())
    return found


# Fixtures of the live-agent tests (imported by their modules): a fake user whose ~/.local/bin
# holds the fake servers, the harness, and every live agent a test started, closed at its end.

@pytest.fixture
def user(tmp_path, monkeypatch):
    home = tmp_path / "user"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    return home


@pytest.fixture
def harness(workspace, scv_home):
    made = Harness(workspace, scv_home)
    yield made
    made.close()


@pytest.fixture
def live():
    started = []
    yield started
    for agent in started:
        agent.close()
