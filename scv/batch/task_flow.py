"""One task on this machine, beyond its agent call: its own git worktree (`isolate`), its checks
(`verify`) and the attempts they allow (`attempts`), then the commit. The local engine and
`scv batch --run-one` (a Ray node) both run tasks through here, so a task's worktree is made on
the machine that runs it.

After a failed check, the next attempt continues the agent's conversation when the agent keeps
one (the prompt names the check and the tail of its output), else starts the agent afresh in
the same folder with the original prompt and that report."""

import os
from pathlib import Path
from typing import Any, Callable

from scv.batch import worktree
from scv.batch.results import COMPLETED
from scv.batch.tasks import Task
from scv.core.cancellation import Cancellation
from scv.core.errors import ScvError

REPORT_TAIL_BYTES = 2048
DEFAULT_VERIFY_TIMEOUT = 600


def _tail(text: str) -> str:
    data = text.encode("utf-8", "replace")
    return data[-REPORT_TAIL_BYTES:].decode("utf-8", "ignore") if len(data) > REPORT_TAIL_BYTES else text


def check_report(check: dict[str, Any]) -> str:
    return (f"The check `{check['command']}` failed (exit code {check['exit_code']}). The last "
            f"{REPORT_TAIL_BYTES // 1024} KiB of its output:\n{check['output_tail']}\n"
            "Fix the work so that the check passes.")


class TaskFlow:
    """Runs one task with `calls` (scv/batch/local_engine.py's AgentCalls)."""

    def __init__(self, calls: Any, batch: str, home: Path):
        self.calls = calls
        self.batch = batch
        self.home = home

    def run(self, lane_runner: Any, task: Task, cancel: Cancellation,
            on_progress: Callable[[str], None]) -> tuple[bool, dict[str, Any]]:
        spec = task.spec
        if not spec.isolate:
            folder = os.path.join(self.calls.ctx.workspace, spec.cwd or ".")
            return self._attempts(lane_runner, task.prepared, task, folder, None, cancel, on_progress)
        try:
            placement = self._place(task)
        except ScvError as err:
            return False, {"status": "failed", "error": str(err)}
        on_progress(f"worktree {placement.path} on {placement.branch}")
        ok, value = False, {"status": "failed", "error": "the task did not finish"}
        try:
            runner = self.calls.runner(placement.path)
            args = {**spec.agent_args(), "cwd": placement.relative}
            prepared = self.calls.prepare(args, placement.path)
            ok, value = self._attempts(runner, prepared, task, placement.folder, placement.path, cancel, on_progress)
        except ScvError as err:
            ok, value = False, {"status": "failed", "error": str(err)}
        finally:
            config = self.calls.config.batch
            message = worktree.commit_message(config.commit_message, spec.id, spec.prompt)
            try:
                value.update(worktree.close_worktree(self.home, placement, message, config.commit_author,
                                                     keep_work=not cancel.cancelled))
            except ScvError as err:
                ok, value = False, {**value, "status": "failed", "error": f"the task's work was not committed: {err}"}
        return ok, value

    def _place(self, task: Task) -> worktree.Placement:
        spec = task.spec
        folder = os.path.realpath(os.path.join(self.calls.ctx.workspace, spec.cwd or "."))
        repository = worktree.repository_of(folder) if os.path.isdir(folder) else None
        if repository is None:
            raise worktree.GitFailed(f"isolate needs cwd inside a git repository, and {folder} is in none here")
        base = spec.base or worktree.commit_of(repository, "HEAD")
        if base is None:
            raise worktree.GitFailed(f"the repository {repository} has no commit to start the worktree at")
        return worktree.open_worktree(self.home, repository, base, self.batch, spec.id,
                                      os.path.relpath(folder, repository))

    def _attempts(self, runner: Any, prepared: Any, task: Task, folder: str, workspace: str | None,
                  cancel: Cancellation, on_progress: Callable[[str], None]) -> tuple[bool, dict[str, Any]]:
        spec = task.spec
        attempts = spec.attempts or 1
        ok, value = False, {}
        for number in range(1, attempts + 1):
            if number > 1:
                on_progress(f"attempt {number} of {attempts}")
            from scv.batch.limits import with_line_limits
            ok, value = self.calls.run(runner, with_line_limits(prepared, spec), cancel, on_progress, task.spec.id)
            if not spec.verify or cancel.cancelled or str(value.get("status") or COMPLETED) != COMPLETED or not ok:
                return ok, value
            checks = self._checks(spec.verify, spec.verify_timeout_seconds or DEFAULT_VERIFY_TIMEOUT, folder, cancel,
                                  on_progress)
            value["verify"], value["verify_attempt"] = checks, number
            if cancel.cancelled:        # stopped during a check: the work was not checked
                value["status"] = "cancelled"
                return False, value
            failed = next((check for check in checks if check["exit_code"] != 0), None)
            if failed is None:
                return ok, value
            if number == attempts:
                value["status"] = "failed"
                value["error"] = (f"the check `{failed['command']}` failed (exit code {failed['exit_code']}) after "
                                  f"{attempts} attempt(s)")
                return False, value
            report = check_report(failed)
            session = value.get("session")
            if session is not None:
                args = {"session": session, "prompt": report}
                if spec.timeout_seconds is not None:
                    args["timeout_seconds"] = spec.timeout_seconds
            else:
                args = {**spec.agent_args(), "prompt": f"{spec.prompt}\n\n{report}"}
                if workspace is not None:
                    args["cwd"] = os.path.relpath(folder, workspace)
            prepared = self.calls.prepare(args, workspace)
        return ok, value

    def _checks(self, commands: list[str], timeout: int, folder: str, cancel: Cancellation,
                on_progress: Callable[[str], None]) -> list[dict[str, Any]]:
        """Each command as a `bash` call in `folder`; they stop at the first that fails."""
        runner = self.calls.runner(folder)
        done = []
        for command in commands:
            if cancel.cancelled:
                break
            on_progress(f"check: {command}")
            try:
                result = runner.run(runner.prepare("bash", {"command": command, "timeout_seconds": timeout}),
                                    cancel=cancel)
                value = result.value
                code = value.get("exit_code")
                output = str(value.get("output") or value.get("error") or "")
                if value.get("timed_out"):
                    output += f"\n(the check did not finish within {timeout} s)"
            except ScvError as err:
                code, output = None, str(err)
            done.append({"command": command, "exit_code": code if isinstance(code, int) else -1,
                         "output_tail": _tail(output)})
            if done[-1]["exit_code"] != 0:
                break
        return done
