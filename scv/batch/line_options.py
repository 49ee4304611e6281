"""The batch's own line fields (isolate, base, verify, attempts): the flags' defaults applied to
each line, and the checks a line must pass before anything starts. `base` is resolved here, once
per repository for the whole batch (the repository's HEAD when the batch first ran, or what an
earlier run with the same --output recorded), and written into the line as a full commit id,
so every task of the repository, on whichever node, starts from the same commit."""

import os
from dataclasses import dataclass, field
from pathlib import Path

from scv.batch import worktree
from scv.batch.tasks import TaskLine

ISOLATE_VALUES = ("worktree",)


@dataclass
class LineOptions:
    workspace: Path
    batch: str = "stdout"
    isolate: str | None = None                  # --isolate
    verify: list[str] | None = None             # --verify, repeated
    verify_timeout_seconds: int | None = None   # --verify-timeout-seconds
    recorded: dict[str, str] = field(default_factory=dict)     # repository -> base an earlier run used
    _bases: dict[str, str] = field(default_factory=dict)

    def check(self, spec: TaskLine) -> str | None:
        """Applies the defaults to `spec`; returns what is wrong with it, or None."""
        if spec.isolate is None:
            spec.isolate = self.isolate
        if spec.verify is None and self.verify:
            spec.verify = list(self.verify)
        if spec.verify_timeout_seconds is None:
            spec.verify_timeout_seconds = self.verify_timeout_seconds
        if spec.verify is not None and any(not command.strip() for command in spec.verify):
            return "verify holds an empty command; give each check as a non-empty shell command"
        if spec.isolate is None:
            if spec.base is not None:
                return 'base is for isolated tasks; add "isolate": "worktree" or leave base out'
            return None
        if spec.isolate not in ISOLATE_VALUES:
            return f"isolate {spec.isolate!r} is not known; the one value is \"worktree\""
        if not worktree.ref_component_ok(spec.id):
            return (f"id {spec.id!r} cannot be part of a git branch name (scv/{self.batch}/<id>); use letters, "
                    "digits and ._-/ without '..' or a leading dot")
        folder = os.path.realpath(os.path.join(self.workspace, spec.cwd or "."))
        if not os.path.isdir(folder):
            return f"cwd {spec.cwd!r} is not a folder; isolate needs the folder inside a git repository"
        repository = worktree.repository_of(folder)
        if repository is None:
            return (f"isolate needs cwd inside a git repository, and {folder} is in none; run git init there or "
                    "drop isolate")
        if spec.base is not None:
            commit = worktree.commit_of(repository, spec.base)
            if commit is None:
                return f"base {spec.base!r} is not a commit of {repository}; name a branch, tag or commit id"
            spec.base = commit
            return None
        base = self._bases.get(repository) or self.recorded.get(repository)
        if base is None:
            base = worktree.commit_of(repository, "HEAD")
            if base is None:
                return f"the repository {repository} has no commit yet; commit once, or give base"
        self._bases[repository] = spec.base = base
        return None
