"""A real Ray cluster on this machine for the Ray integration tests: each "machine" is a private
HOME and SCV_HOME with its own fake agent CLIs (tests/agent_fakes.py) and workspace, and joins
with the real `scv cluster head` / `scv cluster join`. Every Ray process is stopped at the end,
also on failure: `scv cluster leave`, then SIGKILL by recorded pid for anything left."""

import json
import os
import signal
import socket
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from scv.cluster import node as nodes
from scv.cluster import processes
from tests.agent_fakes import install
from tests.conftest import ROOT

CLUSTER_SECONDS = 180

# The fake agents: a reply naming the machine; "hold" prompts wait for the release file; "stay"
# prompts (until released) ignore SIGTERM and leave a setsid grandchild, all pids recorded.
HOLD = """prompt="${{@: -1}}"
echo "$prompt" >> {log}/prompts
case "$prompt" in
  hold*) echo $$ >> {shared}/pids; while [ ! -e {shared}/release ]; do sleep 0.05; done ;;
  stay*) if [ ! -e {shared}/release ]; then trap '' TERM; echo $$ >> {shared}/pids
           setsid bash -c 'echo $$ >> {shared}/pids; exec sleep 300' &
           sleep 300 & echo $! >> {shared}/pids; wait; fi ;;
esac
"""
CODEX_PROGRESS = """prompt="${@: -1}"
printf '%s\\n' '{"type":"item.started","item":{"id":"c","type":"command_execution","command":"make '"$prompt"'"}}'
"""
CODEX_REPLY = """printf '%s\\n' '{{"type":"item.completed","item":{{"id":"i","type":"agent_message","text":"done on {name}"}}}}'
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Machine:
    name: str
    root: Path
    shared: Path
    procs: list[subprocess.Popen] = field(default_factory=list)

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def scv_home(self) -> Path:
        return self.root / "scv-home"

    @property
    def workspace(self) -> Path:
        return self.root / "ws"

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
        env.update(HOME=str(self.home), SCV_HOME=str(self.scv_home), PATH="/usr/bin:/bin", PYTHONPATH=str(ROOT))
        env.update(extra)
        return env

    def setup(self) -> "Machine":
        for folder in (self.home, self.scv_home, self.workspace, self.root / "log"):
            folder.mkdir(parents=True, exist_ok=True)
        return self

    def codex(self) -> None:
        agent = install(self.home / ".local" / "bin", "codex", self.root / "log" / "codex")
        agent.write(CODEX_PROGRESS + HOLD.format(log=self.root / "log", shared=self.shared)
                    + CODEX_REPLY.format(name=self.name))

    def claude(self) -> None:
        agent = install(self.home / ".local" / "bin", "claude", self.root / "log" / "claude")
        agent.replay("claude", "text_reply", before=HOLD.format(log=self.root / "log", shared=self.shared))

    def scv(self, *args: str, timeout: float = CLUSTER_SECONDS, **extra: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "scv", *args], env=self.env(**extra), cwd=self.workspace,
                              stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout)

    def start(self, *args: str, log: Path) -> subprocess.Popen:
        proc = subprocess.Popen([sys.executable, "-m", "scv", *args], env=self.env(), cwd=self.workspace,
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=open(log, "wb"))
        self.procs.append(proc)
        return proc

    def prompts(self) -> list[str]:
        """The prompts the fake agents ran here (not join's sign-in check, `codex login status`)."""
        path = self.root / "log" / "prompts"
        return [p for p in path.read_text().splitlines() if p != "status"] if path.exists() else []

    def records(self) -> list:
        return [r for r in (nodes.read(self.scv_home, role) for role in (nodes.HEAD, nodes.NODE)) if r is not None]

    def json(self, *args: str) -> dict:
        done = self.scv(*args, "--json")
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    def leave(self) -> None:
        """`scv cluster leave`, then whatever it missed, by recorded pid (never by name)."""
        records = self.records()
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
        try:
            self.scv("cluster", "leave", timeout=60)
        finally:
            for record in records:
                for pid in processes.live(record):
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass


def shared_pids(shared: Path) -> list[int]:
    path = shared / "pids"
    return [int(p) for p in path.read_text().split()] if path.exists() else []


def kill_pids(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
