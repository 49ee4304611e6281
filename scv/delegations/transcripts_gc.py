"""`scv agents gc`: removes old transcripts the agent CLIs keep in their private homes.

Only files last written before the cutoff go, and never one written in the last hour; a file
whose path names the CLI session id of a live conversation marker (its SCV process still runs)
is kept. The walk never follows a symlink and never removes one. Folders left empty are removed.
"""

import os
import re
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path

from scv.core.agents.descriptors import DESCRIPTORS, agent_home, state_dir
from scv.delegations.reconcile import live_marker_ids

HOUR = 3600
DEFAULT_AGE = "30d"
_UNITS = {"m": 60, "h": HOUR, "d": 24 * HOUR, "w": 7 * 24 * HOUR}
_AGE = re.compile(r"(\d{1,6})([mhdw])")


def transcript_folders(home: Path) -> dict[str, Path]:
    """Where each CLI keeps its transcripts inside its private home."""
    return {
        "claude": agent_home(home, "claude") / ".claude" / "projects",
        "codex": state_dir(home, DESCRIPTORS["codex"]) / "sessions",
        "pi": state_dir(home, DESCRIPTORS["pi"]) / "sessions",
    }


def parse_age(text: str) -> float:
    """'7d', '12h', '2w', '90m' -> seconds; at least an hour. Raises ValueError with the sentence."""
    match = _AGE.fullmatch(text.strip())
    if not match:
        raise ValueError(f"--older-than {text!r} is not an age such as 30d, 12h, 2w or 90m; pass one")
    seconds = int(match.group(1)) * _UNITS[match.group(2)]
    if seconds < HOUR:
        raise ValueError(f"--older-than {text} is under an hour; transcripts that recent are always kept, so pass "
                         "1h or more")
    return float(seconds)


@dataclass
class AgentSweep:
    agent: str
    files: list[Path] = field(default_factory=list)
    bytes: int = 0
    kept_live: int = 0


def _walk(folder: Path):
    """Regular files under `folder` with their lstat, never entering or yielding a symlink."""
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for entry in entries:
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if stat.S_ISDIR(info.st_mode):
            yield from _walk(Path(entry.path))
        elif stat.S_ISREG(info.st_mode):
            yield Path(entry.path), info


def sweep(home: Path, older_than: float, agents: list[str] | None = None, now: float | None = None,
          dry_run: bool = False) -> list[AgentSweep]:
    now = time.time() if now is None else now
    cutoff = now - max(older_than, HOUR)
    live = live_marker_ids(home)
    out = []
    for agent, folder in transcript_folders(home).items():
        if agents and agent not in agents:
            continue
        result = AgentSweep(agent)
        if not folder.is_symlink() and folder.is_dir():
            for path, info in _walk(folder):
                if info.st_mtime >= cutoff:
                    continue
                relative = str(path.relative_to(folder))
                if any(vendor_id in relative for vendor_id in live):
                    result.kept_live += 1
                    continue
                if not dry_run:
                    try:
                        os.unlink(path)
                    except OSError:
                        continue
                result.files.append(path)
                result.bytes += info.st_size
            if not dry_run:
                _remove_empty(folder)
        out.append(result)
    return out


def _remove_empty(folder: Path) -> None:
    for dirpath, dirnames, filenames in os.walk(folder, topdown=False, followlinks=False):
        if Path(dirpath) == folder:
            continue
        try:
            os.rmdir(dirpath)
        except OSError:
            pass
