"""Where a chat conversation's things live (docs/chat-archive.md), shared by both sides.

- `<archive>/<channel>/<account>/<conversation>/`: the conversation's log, episode files
  `<year>/<week>/<start>.jsonl` (IDs such as `2026/2026-09-21_2026-09-27/2026-09-26T14-04-05`),
  `files/` for kept files and `kept.jsonl`, the record of what was kept from where;
- `$SCV_HOME/state/media/<channel>/<account>/<digest>/`: what the chat's users sent, where
  `<digest>` is the first 16 hex digits of the SHA-256 of the conversation id (UTF-8);
- `$SCV_HOME/state/media/outbox/`: copies of files on their way to a chat.
"""

import os
import re
from datetime import date, datetime, timedelta

KINDS = ("wechat", "feishu")
# Account and conversation ids are opaque, but become folder names: a safe set, no leading dot.
SAFE_ID = r"^[A-Za-z0-9_@+=-][A-Za-z0-9._@+=-]{0,127}$"
EPISODE_ID = re.compile(r"(\d{4})/(\d{4}-\d{2}-\d{2})_(\d{4}-\d{2}-\d{2})/"
                        r"((\d{4})-(\d{2})-(\d{2})T(\d{2})-(\d{2})-(\d{2}))")
EPISODE_SUFFIX = ".jsonl"
_START = "%Y-%m-%dT%H-%M-%S"
KEPT_FOLDER = "files"
KEPT_RECORD = "kept.jsonl"
LOCK_FILE = ".lock"


def conversation_dir(archive: str, kind: str, account: str, conversation: str) -> str:
    return os.path.join(archive, kind, account, conversation)


def media_digest(conversation: str) -> str:
    import hashlib      # late: listing the chat tools needs none of it
    return hashlib.sha256(conversation.encode("utf-8")).hexdigest()[:16]


def media_dir(home: str, kind: str, account: str, conversation: str) -> str:
    return os.path.join(home, "state", "media", kind, account, media_digest(conversation))


def outbox_dir(home: str) -> str:
    return os.path.join(home, "state", "media", "outbox")


def _week(day: date) -> str:
    monday = day - timedelta(days=day.weekday())
    return f"{monday.isoformat()}_{(monday + timedelta(days=6)).isoformat()}"


def episode_id(start: datetime) -> str:
    """The ID of an episode whose first message has this local time (its wall clock)."""
    return f"{start.year:04d}/{_week(start.date())}/{start.strftime(_START)}"


def episode_start(text: str) -> datetime | None:
    """The start of a well-formed episode ID (naive local time), or None for any other shape:
    the year and week folders must be the ones the start falls in."""
    match = EPISODE_ID.fullmatch(text) if isinstance(text, str) else None
    if match is None:
        return None
    try:
        start = datetime(*(int(part) for part in match.groups()[4:]))
    except ValueError:
        return None
    return start if episode_id(start) == text else None


def episode_parts(episode: str) -> list[str]:
    year, week, start = episode.split("/")
    return [year, week, start + EPISODE_SUFFIX]


def make_private_dirs(path: str) -> None:
    """Creates `path` and any missing parents with mode 0700 (os.makedirs gives the parents
    the umask's mode)."""
    missing = []
    while path and not os.path.isdir(path):
        missing.append(path)
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    for folder in reversed(missing):
        try:
            os.mkdir(folder, 0o700)
        except FileExistsError:
            pass
