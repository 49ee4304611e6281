"""A git worktree per batch task (`isolate: worktree`): made at the batch's `base` on the branch
`scv/<batch>/<task id>` under $SCV_HOME/worktrees/, committed and removed when the task ends,
its branch kept. Every git command that touches one repository's worktree list or refs runs
under that repository's lock (a file lock, so runners in other processes on the node wait
too): git's own lock files otherwise fail concurrent `worktree add`s.

Each worktree has a record beside it naming the process that made it (pid and start time), so
`scv agents gc` can remove the worktrees of a driver that was killed (sweep())."""

import fcntl
import hashlib
import os
import re
import shutil
import signal
import subprocess
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import msgspec

from scv.core.delegations.processes import alive, start_time
from scv.core.errors import ScvError

DEFAULT_AUTHOR = "SCV <scv@localhost>"
GIT_TIMEOUT_SECONDS = 300
MESSAGE_FIRST_LINE = 72


class GitFailed(ScvError):
    pass


class Record(msgspec.Struct, kw_only=True):
    path: str
    repository: str
    branch: str
    pid: int
    pid_start: float | None


def git(cwd: str, *args: str, env: dict[str, str] | None = None) -> str:
    """Runs one git command; raises GitFailed with git's own message."""
    try:
        proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=GIT_TIMEOUT_SECONDS,
                              env={**os.environ, **(env or {}), "GIT_TERMINAL_PROMPT": "0"}, stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        raise GitFailed("git is not installed; install it to use isolate: worktree") from None
    except subprocess.TimeoutExpired:
        raise GitFailed(f"git {args[0]} did not finish within {GIT_TIMEOUT_SECONDS} s in {cwd}") from None
    if proc.returncode != 0:
        message = (proc.stderr.strip() or proc.stdout.strip()).splitlines()
        raise GitFailed(f"git {args[0]} failed: {message[-1] if message else f'exit {proc.returncode}'}")
    return proc.stdout


def repository_of(folder: str) -> str | None:
    """The top folder of the git repository holding `folder`, or None."""
    try:
        return os.path.realpath(git(folder, "rev-parse", "--show-toplevel").strip())
    except (GitFailed, OSError):
        return None


def commit_of(repository: str, revision: str) -> str | None:
    try:
        return git(repository, "rev-parse", "--verify", "--quiet", f"{revision}^{{commit}}").strip() or None
    except GitFailed:
        return None


_BAD_REF = re.compile(r"(^|/)\.|\.\.|[:~^?*\[\\ ]|@\{|//|/$|\.$|\.lock(/|$)|^@$")


def ref_component_ok(text: str) -> bool:
    """Whether `text` may follow `scv/<batch>/` in a branch name (git check-ref-format's rules)."""
    return bool(text) and not _BAD_REF.search(text) and not any(ord(c) < 32 or c == "\x7f" for c in text)


def batch_name(output: Path | None) -> str:
    """`<batch>` in the branch names: the --output file's name without its extension."""
    if output is None:
        return "stdout"
    return output.name.split(".", 1)[0] or output.name


def worktrees_home(home: Path) -> Path:
    return home / "worktrees"


@contextmanager
def repository_lock(home: Path, repository: str) -> Iterator[None]:
    folder = worktrees_home(home)
    folder.mkdir(parents=True, exist_ok=True)
    key = hashlib.sha256(repository.encode()).hexdigest()[:16]
    # A fresh open per holder: flock conflicts between open files, so threads wait as processes do.
    fd = os.open(folder / f".{key}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


@dataclass
class Placement:
    """Where one task runs: its worktree, and the folder inside it that matches the task's cwd."""
    repository: str
    base: str
    branch: str
    path: str
    relative: str           # the task's cwd relative to the repository's top
    record: Path

    @property
    def folder(self) -> str:
        return os.path.normpath(os.path.join(self.path, self.relative))


def _place(home: Path, repository: str, batch: str, task_id: str) -> tuple[str, Path]:
    key = hashlib.sha256(f"{repository}\0{batch}\0{task_id}".encode()).hexdigest()[:20]
    return str(worktrees_home(home) / key), worktrees_home(home) / f"{key}.json"


def _drop(repository: str, path: str) -> None:
    """Removes a worktree folder and git's entry for it, whatever state it was left in."""
    try:
        git(repository, "worktree", "remove", "--force", "--force", path)
    except GitFailed:
        # Only a folder git no longer knows (or half made) gets here: remove it, then git's entry.
        shutil.rmtree(path, ignore_errors=True)
        git(repository, "worktree", "prune")


def open_worktree(home: Path, repository: str, base: str, batch: str, task_id: str, relative: str) -> Placement:
    """A fresh worktree at `base` on `scv/<batch>/<task id>` (reset to base when it exists)."""
    path, record = _place(home, repository, batch, task_id)
    branch = f"scv/{batch}/{task_id}"
    with repository_lock(home, repository):
        if os.path.exists(path) or record.exists():
            _drop(repository, path)         # left by a driver that was killed: this run starts it again
        pid = os.getpid()
        record.write_bytes(msgspec.json.encode(Record(path=path, repository=repository, branch=branch, pid=pid,
                                                      pid_start=start_time(pid))))
        try:
            git(repository, "worktree", "add", "--quiet", "-B", branch, path, base)
        except GitFailed:
            record.unlink(missing_ok=True)
            raise
    placement = Placement(repository, base, branch, path, relative, record)
    os.makedirs(placement.folder, exist_ok=True)
    return placement


def _identity(repository: str, author: str | None) -> dict[str, str]:
    """Environment naming the commit's author and committer: the configured one, else the
    repository's own identity, else SCV's."""
    if author is None:
        try:
            name = git(repository, "config", "user.name").strip()
            email = git(repository, "config", "user.email").strip()
        except GitFailed:
            name = email = ""
        author = f"{name} <{email}>" if name and email else DEFAULT_AUTHOR
    match = re.fullmatch(r"\s*(.*?)\s*<([^<>]*)>\s*", author)
    name, email = (match.group(1), match.group(2)) if match else (author.strip(), "scv@localhost")
    return {"GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email, "GIT_COMMITTER_NAME": name,
            "GIT_COMMITTER_EMAIL": email}


def commit_message(template: str, task_id: str, prompt: str) -> str:
    first = next((line.strip() for line in prompt.splitlines() if line.strip()), "")
    message = template.replace("{id}", task_id).replace("{prompt_first_line}", first)
    head, _, rest = message.partition("\n")
    if len(head) > MESSAGE_FIRST_LINE:
        head = head[:MESSAGE_FIRST_LINE - 1].rstrip() + "…"
    return head + ("\n" + rest if rest else "")


def close_worktree(home: Path, placement: Placement, message: str, author: str | None,
                   keep_work: bool = True) -> dict[str, Any]:
    """Commits what the task left (unless keep_work is False: a cancelled task's work is
    discarded), removes the worktree, and returns the result line's fields. A task that changed
    nothing leaves no branch."""
    repository, path = placement.repository, placement.path
    head = None
    try:
        if keep_work:
            git(path, "add", "--all")
            if git(path, "status", "--porcelain"):
                git(path, "commit", "--quiet", "--no-verify", "-m", message, env=_identity(repository, author))
        head = git(path, "rev-parse", "HEAD").strip()
        if head != placement.base:      # a task that changed nothing (most of a no-op batch) needs no diff
            changed = [name for name in git(path, "diff", "--name-only", "-z", placement.base, head).split("\0")
                       if name]
            diffstat = git(path, "diff", "--shortstat", placement.base, head).strip()
    finally:
        with repository_lock(home, repository):
            _drop(repository, path)
            placement.record.unlink(missing_ok=True)
            if keep_work and head == placement.base:
                git(repository, "branch", "--quiet", "-D", placement.branch)
    if head == placement.base:
        # A cancelled task's branch stays (at base here), so the line names it; one that changed nothing has none.
        return {"repository": repository, "branch": None if keep_work else placement.branch, "base": placement.base,
                "commit": None, "changed_files": [], "diffstat": ""}
    return {"repository": repository, "branch": placement.branch, "base": placement.base, "commit": head, "changed_files": changed,
            "diffstat": diffstat}


def _stop_inside(path: str) -> int:
    """SIGKILLs the processes working in `path` (agents orphaned with their driver)."""
    stopped, me = 0, os.getpid()
    prefix = path.rstrip("/") + "/"
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            cwd = os.readlink(f"/proc/{entry}/cwd")
        except OSError:
            continue
        if cwd == path or cwd.startswith(prefix):
            try:
                os.kill(int(entry), signal.SIGKILL)
                stopped += 1
            except OSError:
                pass
    return stopped


def sweep(home: Path, dry_run: bool = False) -> list[dict[str, Any]]:
    """Removes the worktrees whose driver is gone (after stopping what still runs in them) and
    prunes git's worktree list; branches stay. Returns what was (or would be) removed."""
    folder = worktrees_home(home)
    found = []
    for record_path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            record = msgspec.json.decode(record_path.read_bytes(), type=Record)
        except (OSError, msgspec.DecodeError):
            continue
        if alive(record.pid, record.pid_start):
            continue
        found.append({"path": record.path, "repository": record.repository, "branch": record.branch})
        if dry_run:
            continue
        _stop_inside(record.path)
        with repository_lock(home, record.repository):
            if os.path.isdir(record.repository):
                try:
                    _drop(record.repository, record.path)
                    git(record.repository, "worktree", "prune")     # entries of folders removed by hand too
                except GitFailed:
                    shutil.rmtree(record.path, ignore_errors=True)
            else:
                shutil.rmtree(record.path, ignore_errors=True)
            record_path.unlink(missing_ok=True)
    return found
