"""Where a session runs and what it starts with: the workspace a command names, and the session
context loaded from the configuration (used by the commands, the batch engines and the stdio server)."""

import os
from pathlib import Path

from scv.config.load import load_config
from scv.core.errors import UsageError
from scv.core.lineage import inherited_depth
from scv.tools.context import ToolContext


def resolve_workspace(value: str | None) -> Path:
    path = Path(value or ".")
    try:
        resolved = path.resolve(strict=True)
    except (OSError, RuntimeError):
        raise UsageError(f"workspace {str(path)!r} does not exist; pass an existing directory to -C") from None
    if not resolved.is_dir():
        raise UsageError(f"workspace {str(path)!r} is not a directory; pass a directory to -C")
    return resolved


def load_context(workspace: str | None, *, skills: bool = True) -> ToolContext:
    """`skills`: look for the session's skills (a single tool call other than read_skill needs none)."""
    root = resolve_workspace(workspace)
    # A session started by a delegated agent carries its depth, so the delegation limit holds.
    depth = inherited_depth(dict(os.environ))
    config = load_config(root)
    found = None
    if skills:
        from scv.skills.index import session_skills
        found = session_skills(root, config)
    return ToolContext(workspace=root, config=config, delegation_depth=depth, skills=found)

