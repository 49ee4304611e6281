"""`chat_keep`: keeps a file the owner sent for good, moving it from the chat media (which
expires) to the conversation's kept files (sessions whose bridge named the log).

Only a file directly in this conversation's media folder is taken (its folder resolved, its own
name never a link: the worker checks); a path among the kept files is answered with where it is.
"""

import os
from typing import Annotated

import msgspec
from msgspec import Meta

from scv.chat.channel import ChatChannel
from scv.core.errors import RefusedError
from scv.core.paths import MAX_COMPONENT_BYTES, MAX_PATH_BYTES
from scv.tools.base import Risk, ToolContext, ToolSpec, short


class ChatKeepArgs(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    path: Annotated[str, Meta(max_length=MAX_PATH_BYTES, description=(
        "The file's absolute path, as the turn or chat_history showed it in the chat media."))]


def place(args: ChatKeepArgs, channel: ChatChannel) -> str:
    """Which of this conversation's folders the path is directly in: "media" or "kept"."""
    path = args.path
    name = os.path.basename(path)
    if "\x00" in path or not path.startswith("/") or name in ("", ".", "..") or \
            len(name.encode("utf-8", "surrogatepass")) > MAX_COMPONENT_BYTES:
        raise RefusedError(f"chat_keep takes the absolute path of a file in this chat's media folder, "
                           f"{channel.media}; {path[:200]!r} is not one")
    folder = os.path.realpath(os.path.dirname(path))
    if folder == channel.media:
        return "media"
    if folder == os.path.realpath(channel.kept):
        return "kept"
    raise RefusedError(f"chat_keep keeps only a file directly in this chat's media folder {channel.media}; "
                       f"{path[:200]} is not there (files of other chats and other paths are refused)")


class ChatKeepTool(ToolSpec):
    name = "chat_keep"
    description = ("Keep a file the user sent in this chat for good: it moves from the chat media, whose files "
                   "expire, to this conversation's kept files, never replacing another file. path is the absolute "
                   "path shown with the file. Returns where it is kept.")
    Args = ChatKeepArgs
    executor = "workers.chat_keep:execute"
    declared_risk = Risk.FILESYSTEM
    example = {"path": "/home/u/.scv/state/media/wechat/default/3fa9c2d17e5b8a04/a1b2c3-cat.jpg"}

    def _channel(self, ctx: ToolContext) -> ChatChannel:
        if ctx.channel is None or ctx.channel.log is None:
            raise RefusedError("chat_keep is only offered in a chat session whose bridge named its log")
        return ctx.channel

    def check(self, args: ChatKeepArgs, ctx: ToolContext) -> None:
        place(args, self._channel(ctx))

    def summary(self, args: ChatKeepArgs, ctx: ToolContext) -> str:
        channel = self._channel(ctx)
        if place(args, channel) == "kept":
            return short(f"show where the kept file {args.path} is")
        return short(f"keep {os.path.basename(args.path)} from the chat media in {channel.kept}")

    def worker_args(self, args: ChatKeepArgs, ctx: ToolContext) -> dict:
        channel = self._channel(ctx)
        return {"path": args.path, "name": os.path.basename(args.path), "where": place(args, channel),
                "media": channel.media, "kept": channel.kept, "log": channel.log}
