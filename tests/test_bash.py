"""`bash` through the real supervisor: exit statuses, bounded output, and stopping processes."""

import threading
import time

import pytest

from scv.config.load import Config, ToolsConfig
from scv.core.cancellation import Cancellation
from scv.core.oscalls import REAL
from tests.fakes import settle


def bash(runner, command, **kw):
    args = {"command": command}
    if "timeout" in kw:
        args["timeout_seconds"] = kw.pop("timeout")
    return runner.run(runner.prepare("bash", args), **kw)


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except FileNotFoundError:
        return False


def test_success_and_output(runner):
    result = bash(runner, "echo out; echo err >&2")
    assert result.ok
    assert result.value["exit_code"] == 0 and result.value["signal"] is None
    assert sorted(result.value["output"].split()) == ["err", "out"]
    assert result.value["output_bytes"] == 8
    assert result.value["truncated"] is False and result.value["timed_out"] is False


def test_nonzero_exit_is_a_failed_result_with_every_field(runner):
    result = bash(runner, "echo partial; exit 7")
    assert not result.ok
    assert result.value["exit_code"] == 7
    assert result.value["output"] == "partial\n"
    assert "status 7" in result.value["error"]


def test_runs_in_the_workspace_with_stdin_from_dev_null(runner, workspace):
    result = bash(runner, "pwd; cat; echo done")
    assert result.value["output"] == f"{workspace}\ndone\n"


def test_output_keeps_head_and_tail_within_the_limit(make_runner):
    runner = make_runner(Config(tools=ToolsConfig(output_limit_bytes=4096)))
    result = bash(runner, "seq 1 100000")
    value = result.value
    assert value["truncated"] is True
    assert value["output"].startswith("1\n2\n3\n")
    assert value["output"].endswith("99999\n100000\n")
    assert value["output_bytes"] == len("".join(f"{i}\n" for i in range(1, 100001)))
    assert "bytes of output omitted" in value["output"]
    assert len(value["output"].encode()) < 4096 + 100


def test_a_gibibyte_flood_is_drained_within_a_small_memory_ceiling(make_runner):
    # With a 256 MiB address-space ceiling the worker would die if it kept the output.
    runner = make_runner(Config(tools=ToolsConfig(worker_memory_mb=256)))
    result = bash(runner, "head -c 1G /dev/zero")
    assert result.ok, result.value.get("error")
    assert result.value["output_bytes"] == 1 << 30
    assert result.value["truncated"] is True
    assert len(result.value["output"]) < 70_000


def test_commands_are_not_bound_by_the_worker_memory_ceiling(make_runner):
    runner = make_runner(Config(tools=ToolsConfig(worker_memory_mb=128)))
    result = bash(runner, "python3 -c 'b = bytearray(300 << 20); print(len(b))'")
    assert result.ok, result.value
    assert result.value["output"].strip() == str(300 << 20)


def test_a_detached_background_child_does_not_keep_the_call_alive(runner):
    started = time.monotonic()
    result = bash(runner, "(sleep 600 &); echo x", timeout=60)
    assert result.ok
    assert result.value["output"] == "x\n"
    assert result.value["stopped_descendants"] >= 1
    assert time.monotonic() - started < 30     # far below the timeout: not held by the pipe


def test_a_setsid_grandchild_is_gone_after_the_call(runner):
    result = bash(runner, "setsid sleep 600 >/dev/null 2>&1 & echo $!", timeout=60)
    pid = int(result.value["output"].strip())
    assert result.ok
    assert not alive(pid)


def test_a_setsid_grandchild_holding_the_pipe_is_stopped(runner):
    result = bash(runner, "setsid sh -c 'echo $$; sleep 600' & sleep 0.5", timeout=60)
    pid = int(result.value["output"].split()[0])
    assert not alive(pid)


def test_the_deadline_kills_at_once_without_term(runner):
    # A TERM handler would print; with KILL sent at once it never runs.
    result = bash(runner, "trap 'echo got-term' TERM; sleep 600 & wait", timeout=1)
    assert not result.ok
    assert result.value["timed_out"] is True
    assert result.value["exit_code"] is None and result.value["signal"] == "SIGKILL"
    assert "got-term" not in result.value["output"]
    assert "timed out" in result.value["error"]


def test_cancellation_sends_term_first(runner, workspace):
    result = bash(runner, "touch ready; sleep 600", cancel=cancel_when_exists(workspace / "ready"))
    assert not result.ok
    assert result.value["cancelled"] is True
    assert result.value["signal"] == "SIGTERM"


def cancel_when_exists(path) -> Cancellation:
    cancel = Cancellation()

    def watch():
        settle(path.exists, seconds=60, interval=0.02)
        cancel.cancel()
    threading.Thread(target=watch, daemon=True).start()
    return cancel


def test_a_cancel_sent_before_the_worker_reads_it_is_not_lost(runner):
    cancel = Cancellation()
    cancel.cancel()
    result = bash(runner, "sleep 600", cancel=cancel, timeout=120)
    assert result.value["cancelled"] is True and result.value["timed_out"] is False


def test_cancellation_kills_a_child_that_ignores_term_after_the_grace(runner, workspace):
    started = time.monotonic()
    result = bash(runner, "trap '' TERM; echo $$; touch ready; sleep 600",
                  cancel=cancel_when_exists(workspace / "ready"))
    pid = int(result.value["output"].split()[0])
    assert result.value["cancelled"] is True
    assert result.value["signal"] == "SIGKILL"
    assert time.monotonic() - started >= 2.0     # the policy waited its grace before KILL
    assert not alive(pid)


def test_tagged_processes_are_none_left_after_calls(runner):
    result = bash(runner, "sleep 300 & setsid sleep 300 & echo $SCV_CALL", timeout=60)
    tag = result.value["output"].strip()
    assert tag.count("/") == 1
    assert REAL.tagged(tag) == []


def test_a_child_killed_by_a_signal(runner):
    result = bash(runner, "kill -SEGV $$")
    assert not result.ok
    assert result.value["signal"] == "SIGSEGV"
    assert result.value["exit_code"] is None


def test_the_timeout_ceiling_is_refused_before_anything_runs(runner):
    from scv.core.errors import RefusedError
    with pytest.raises(RefusedError, match="over the ceiling of 14400 seconds"):
        runner.prepare("bash", {"command": "true", "timeout_seconds": 14401})
