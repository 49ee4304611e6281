"""The chat conversation a session serves, named by the bridge in `session.start`'s `channel`
(docs/protocol.md, docs/channels.md): its ids, its folders, and the files of the reply being
written. Built once when the session starts; `chat_attach`, `chat_history` and `chat_keep` and
the turn loop read it from `ToolContext.channel`.
"""

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scv.config.load import Config, scv_home
from scv.core.chat.layout import conversation_dir, media_dir, outbox_dir
from scv.core.chat.refusals import AttachRules
from scv.core.errors import UsageError

MAX_REPLY_FILES = 8


@dataclass
class ChatChannel:
    kind: str
    account: str
    conversation: str
    home: str                       # SCV_HOME, canonical
    archive: str                    # the chat archive, canonical
    conversation_dir: str           # <archive>/<kind>/<account>/<conversation>
    media: str                      # $SCV_HOME/state/media/<kind>/<account>/<digest>
    log: str | None = None          # the conversation folder, when the bridge named it: history on
    keep_days: int | None = None
    user_homes: tuple[str, ...] = ()    # $HOME and the password database's home, canonical
    # The attachments of the reply being written (chat_attach results); reset when a turn starts.
    reply: list[dict[str, Any]] = field(default_factory=list)

    @property
    def kept(self) -> str:
        return os.path.join(self.conversation_dir, "files")

    @property
    def outbox(self) -> str:
        return outbox_dir(self.home)

    @property
    def product(self) -> str:
        return {"wechat": "WeChat", "feishu": "Feishu"}.get(self.kind, self.kind)

    def rules(self) -> AttachRules:
        return AttachRules(home=self.home, archive=self.archive, media=self.media, kept=self.kept,
                           outbox=self.outbox, user_homes=self.user_homes)

    def describe(self) -> dict[str, Any]:
        """What `session.start` reports about the channel."""
        return {"kind": self.kind, "account": self.account, "conversation": self.conversation, "media": self.media,
                "outbox": self.outbox, "log": self.log, "kept": self.kept if self.log else None,
                "keep_days": self.keep_days}

    # --- the reply's files -------------------------------------------------------------------

    def begin_reply(self) -> None:
        self.reply = []

    def captioned(self, text: str) -> str:
        """The reply text with `<name>: <caption>` for each attachment that has a caption."""
        lines = [f"{a['name']}: {a['caption']}" for a in self.reply if a.get("caption")]
        if not lines:
            return text
        return (text.rstrip() + "\n\n" if text.strip() else "") + "\n".join(lines)


def _password_home() -> str | None:
    try:
        import pwd
        return pwd.getpwuid(os.getuid()).pw_dir
    except (ImportError, KeyError):
        return None


def archive_root(config: Config, home: Path) -> str:
    return os.path.realpath(config.chat.archive_dir or home / "archive")


def open_channel(kind: str, account: str, conversation: str, log: str | None, keep_days: int | None,
                 config: Config) -> ChatChannel:
    """The channel of a starting session; a `log` that is not this conversation's folder in the
    archive is refused."""
    home = os.path.realpath(scv_home())
    archive = archive_root(config, Path(home))
    folder = os.path.realpath(conversation_dir(archive, kind, account, conversation))
    if log is not None:
        if not log.startswith("/"):
            raise UsageError(f"channel.log {log!r} is not an absolute path; name this conversation's folder in "
                             f"the chat archive, {folder}")
        if os.path.realpath(log) != os.path.realpath(folder):
            raise UsageError(f"channel.log {log!r} is not this conversation's folder in the chat archive; it must be "
                             f"{folder}")
        log = folder
    homes = {os.path.realpath(h) for h in (os.environ.get("HOME"), _password_home()) if h}
    return ChatChannel(kind=kind, account=account, conversation=conversation, home=home, archive=archive,
                       conversation_dir=folder, media=os.path.realpath(media_dir(home, kind, account, conversation)),
                       log=log, keep_days=keep_days, user_homes=tuple(sorted(homes)))
