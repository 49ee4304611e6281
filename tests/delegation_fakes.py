"""Helpers for the background job, delegation and batch tests: fake agent CLIs installed in a fake
user's ~/.local/bin (through the committed launcher, see tests/agent_fakes.py), and looking up the
processes a delegated run tagged with SCV_PARENT. The generic helpers are in tests/fakes.py."""

import json
import os
import signal
import sys
from pathlib import Path

import psutil

from tests.agent_fakes import CAPTURES, install

CODEX_REPLY = CAPTURES / "codex" / "resume_0_first.jsonl"     # replies "hi from fake"


CODEX_THREAD = "01a23691-2d39-76f3-96e6-26722adb2aab"


def codex_reply_lines(text: str, thread: str = CODEX_THREAD) -> str:
    """Bash that prints a codex --json run whose reply is `text` (`thread` may use `$$`)."""
    events = [{"type": "thread.started", "thread_id": thread},
              {"type": "item.completed", "item": {"id": "item_0", "type": "agent_message", "text": text}},
              {"type": "turn.completed", "usage": {"input_tokens": 1, "output_tokens": 1}}]
    return "\n".join(f"printf '%s\\n' {json.dumps(json.dumps(e))}" for e in events) + "\n"


def fake_agent(tmp_path: Path, name: str, body: str):
    agent = install(tmp_path / "user" / ".local" / "bin", name, tmp_path / "log" / name)
    agent.write(body)
    return agent


def tagged_with(fragment: str) -> list[psutil.Process]:
    """Live (not zombie) processes whose SCV_PARENT contains `fragment`."""
    found = []
    for process in psutil.process_iter():
        try:
            if process.pid == os.getpid() or process.status() == psutil.STATUS_ZOMBIE:
                continue
            with open(f"/proc/{process.pid}/environ", "rb") as fh:
                env = fh.read().split(b"\0")
        except (OSError, psutil.Error):
            continue
        if any(item.startswith(b"SCV_PARENT=") and fragment.encode() in item for item in env):
            found.append(process)
    return found


def conversation_markers(home: Path) -> Path:
    """Where a job's conversation leaves its marker when its result reaches the session: a bash
    step that waits for markers waits until the supervisor has taken the jobs' results."""
    return home / "state" / "conversations"


def records_in(home: Path) -> list[dict]:
    folder = home / "state" / "delegations"
    if not folder.is_dir():
        return []
    return [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))]


def kill_scv_tree(scv_pid: int, handle: str) -> None:
    """SIGKILLs an SCV process and every process it started (supervisor, fork point, workers) but
    those tagged with the delegation `handle`, as a crash would: all are stopped before any is
    killed, so none sees another die and cleans up first."""
    tagged = {p.pid for p in tagged_with(handle)}
    scv_tree = [p for p in psutil.Process(scv_pid).children(recursive=True) if p.pid not in tagged]
    victims = [psutil.Process(scv_pid), *scv_tree]
    for victim in victims:
        victim.send_signal(signal.SIGSTOP)
    for victim in victims:
        victim.send_signal(signal.SIGKILL)


def gone(pids: list[int]) -> bool:
    """True when none of `pids` runs any more (a zombie awaiting its parent counts as gone)."""
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                return False
        except psutil.NoSuchProcess:
            continue
    return True


def session_services(ctx, home: Path | None = None):
    """What a session hands its tools: its agents (discovered now) and, with jobs on, a job table
    whose report turns go nowhere."""
    from scv.agents.session import open_agent_session
    from scv.config.load import scv_home
    from scv.jobs.manager import Jobs
    from scv.tools.services import Services
    jobs = None
    if ctx.config.agent.max_background > 0:
        jobs = Jobs(ctx.config.agent.max_background, ctx.config.tools.approval_policy, False, lambda build: None)
    return Services(agents=open_agent_session(ctx.config, home or scv_home()), jobs=jobs)


def scv_patched(patch: str, *args: str) -> list[str]:
    """The command line of `scv ARGS` in a process that first runs `patch` (Python): how a test
    widens a gap between two steps of SCV so that a race in it shows in every run."""
    main = 'import runpy, sys\nsys.argv[0] = "scv"\nrunpy.run_module("scv", run_name="__main__", alter_sys=True)\n'
    return [sys.executable, "-c", patch + "\n" + main, *args]
