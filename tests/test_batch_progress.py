"""The batch's progress on stderr: a live line redrawn at most 5 times a second on a terminal,
a line per task event (progress at most once per 2 s per task) elsewhere, the final tally only
with --quiet; and through a real `scv batch` on a pseudo-terminal and on a pipe."""

import io
import os
import re
import select
import subprocess
import sys
import time

from scv.batch.engine import Node
from scv.batch.progress import Display, EventLines, LiveLine, Tally, choose
from tests.batch_fakes import FakeClock
from tests.conftest import scv_env
from tests.delegation_fakes import fake_agent
from tests.fakes import setup_fake_home
from tests.batch_fakes import write_tasks

NODE = Node(host="box", id=None, name="node-2")


def test_event_lines_show_each_task_at_most_once_per_two_seconds():
    clock, out = FakeClock(), io.StringIO()
    shown = EventLines(out, clock=clock)
    tally = Tally(total=2)
    shown.started("t3", 1, NODE)
    shown.started("t4", 2, NODE)
    for step in range(10):          # 10 lines over 4.5 s for each task
        shown.progress("t3", NODE, f"t3 step {step}")
        shown.progress("t4", NODE, f"t4 step {step}")
        clock.now += 0.5
    tally.done = 1
    shown.finished("t3", "completed", NODE, tally)
    lines = out.getvalue().splitlines()
    assert lines[:2] == ["t3@node-2: started", "t4@node-2: started (attempt 2)"]
    assert [line for line in lines if line.startswith("t3@")][1:] == ["t3@node-2: t3 step 0", "t3@node-2: t3 step 4",
                                                                      "t3@node-2: t3 step 8"]
    assert len([line for line in lines if line.startswith("t4@")]) == 4
    assert lines[-1].startswith("scv batch: 1/2 done, 0 running, 0 failed, 0 lost") and lines[-1].endswith("(t3: completed)")


def test_the_live_line_is_redrawn_at_most_five_times_a_second_with_running_tasks_above_it():
    clock, out = FakeClock(), io.StringIO()
    live = LiveLine(out, clock=clock)
    tally = Tally(total=3, running=2)
    live.started("t1", 1, NODE)
    live.started("t2", 1, NODE)
    for step in range(100):         # 100 ticks over 2 s, progress on each
        live.progress("t1", NODE, f"editing file {step}")
        live.tick(tally)
        clock.now += 0.02
    text = out.getvalue()
    redraws = text.count("scv batch: ")
    assert 2 <= redraws <= 11
    last = text.rsplit("\x1b[J", 1)[-1].splitlines()
    assert last[0].startswith("  t1@node-2: editing file ") and last[1] == "  t2@node-2: started"
    assert last[2].startswith("scv batch: 0/3 done, 2 running")
    live.finished("t2", "failed", NODE, tally)          # a failure stays above the live line
    live.final("scv batch: final")
    # The block is erased (up 3 lines, clear), the failure printed, then the final line.
    assert out.getvalue().endswith("\x1b[3F\x1b[Jt2@node-2: failed\nscv batch: final\n")


def test_the_rate_shows_from_the_first_second_while_running_and_always_once_over():
    tally = Tally(total=3, done=3, started_at=time.monotonic() - 0.5)
    assert tally.line().endswith(" 0.00 tasks/s")
    rate = float(tally.line(over=True).split(", ")[-1].split()[0])
    assert 0 < rate <= 6.0          # three tasks in at least half a second


def test_quiet_prints_only_the_final_tally_and_choose_follows_the_stream():
    out = io.StringIO()
    quiet = choose(out, quiet=True)
    assert type(quiet) is Display
    quiet.note("hello")
    quiet.started("t", 1, NODE)
    quiet.progress("t", NODE, "x")
    quiet.finished("t", "completed", NODE, Tally(total=1))
    quiet.tick(Tally(total=1))
    quiet.final("the end")
    assert out.getvalue() == "the end\n"
    assert isinstance(choose(io.StringIO(), quiet=False), EventLines)
    primary, secondary = os.openpty()
    with os.fdopen(secondary, "w") as terminal:
        assert isinstance(choose(terminal, quiet=False), LiveLine)
    os.close(primary)


AGENT = """prompt="${@: -1}"
printf '%s\\n' '{"type":"item.started","item":{"id":"c","type":"command_execution","command":"make '"$prompt"'"}}'
printf '%s\\n' '{"type":"item.completed","item":{"id":"i","type":"agent_message","text":"done"}}'
"""


def _read_all(fd: int, proc: subprocess.Popen) -> str:
    chunks = []
    while True:
        ready, _, _ = select.select([fd], [], [], 60)
        if not ready:
            break
        try:
            data = os.read(fd, 65536)
        except OSError:         # EIO: the terminal's other side closed
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(60)
    return b"".join(chunks).decode(errors="replace")


def test_scv_batch_draws_the_live_line_on_a_terminal_and_event_lines_on_a_pipe(tmp_path, monkeypatch, workspace):
    setup_fake_home(tmp_path, monkeypatch)
    fake_agent(tmp_path, "codex", AGENT)
    batch = write_tasks(tmp_path / "b.jsonl", "alpha", "beta")
    primary, secondary = os.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "scv", "batch", str(batch), "--parallel", "1", "-C",
                             str(workspace)], env=scv_env(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=secondary)
    os.close(secondary)
    try:
        screen = _read_all(primary, proc)
    finally:
        os.close(primary)
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, screen
    assert "\x1b[J" in screen                                 # redrawn in place
    assert re.search(r"t\d@[^:]+: (started|\$ make alpha)", screen)
    assert screen.rstrip().splitlines()[-1].split("\x1b[J")[-1].startswith("scv batch: 2/2 done, 0 running")
    piped = subprocess.run([sys.executable, "-m", "scv", "batch", str(batch), "-C", str(workspace)], env=scv_env(),
                           stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
    assert piped.returncode == 0 and "\x1b" not in piped.stderr
    assert re.search(r"^t0@[^:]+: started$", piped.stderr, re.M)
    assert re.search(r"^t0@[^:]+: \$ make alpha$", piped.stderr, re.M)
    assert re.search(r"^scv batch: \d/2 done.*\(t1: completed\)$", piped.stderr, re.M)
    quiet = subprocess.run([sys.executable, "-m", "scv", "batch", str(batch), "--quiet", "-C", str(workspace)],
                           env=scv_env(), stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
    assert quiet.returncode == 0 and quiet.stderr.count("\n") == 1
    assert quiet.stderr.startswith("scv batch: 2/2 done, 0 running, 0 failed, 0 lost")
