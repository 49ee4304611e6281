"""`chat_attach`: sends a file to the chat after the reply text (chat-channel sessions only).

Every refusal of `scv.core.chat.refusals` is decided here on the resolved path before approval, so a
refused call is never put to the chat owner, and again in the worker through the open handle.
The worker copies the file into the outbox with a delivery record; `complete()` adds the copy
to the reply's attachments, which `turn.completed` lists for the bridge.
"""

import os
from typing import Annotated

import msgspec
from msgspec import Meta

from scv.chat.channel import MAX_REPLY_FILES, ChatChannel
from scv.core.chat.refusals import file_refusal, path_refusal, refused
from scv.core.errors import RefusedError
from scv.core.messages import Result
from scv.core.paths import MAX_PATH_BYTES
from scv.tools.base import Risk, ToolContext, ToolSpec, short

MAX_CAPTION_BYTES = 1024


class ChatAttachArgs(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    path: Annotated[str, Meta(description="The file to send: absolute, or relative to the workspace.")]
    caption: Annotated[str, Meta(description=(
        "A short caption (at most 1 KiB); it goes into the reply text as `<name>: <caption>`."))] | None = None


def absolute_path(path: str, ctx: ToolContext) -> str:
    if not path:
        raise RefusedError("chat_attach needs a path; give the file to send")
    if "\x00" in path:
        raise RefusedError("chat_attach path contains a NUL byte; remove it")
    try:
        size = len(path.encode("utf-8"))
    except UnicodeEncodeError:
        raise RefusedError("chat_attach path is not valid UTF-8; use the real file name") from None
    if size > MAX_PATH_BYTES:
        raise RefusedError(f"chat_attach path is {size} bytes long, over the {MAX_PATH_BYTES}-byte limit")
    if path.startswith("~"):
        raise RefusedError(f"chat_attach path {path!r} starts with '~', which is not expanded; give it absolute or "
                           "relative to the workspace")
    return path if path.startswith("/") else os.path.join(ctx.workspace, path)


class ChatAttachTool(ToolSpec):
    name = "chat_attach"
    description = ("Send a file to the user in this chat, after your reply text: images (PNG, JPEG, GIF, WebP, BMP) "
                   "arrive as pictures, video as video, anything else as a file. Call it once per file, at most "
                   f"{MAX_REPLY_FILES} per reply. Secrets, credentials and SCV's own files are refused.")
    Args = ChatAttachArgs
    executor = "workers.chat_attach:execute"
    declared_risk = Risk.NETWORK
    example = {"path": "out/chart.png", "caption": "Sales by month"}

    def _channel(self, ctx: ToolContext) -> ChatChannel:
        if ctx.channel is None:
            raise RefusedError("chat_attach is only offered in a chat channel's session")
        return ctx.channel

    def check(self, args: ChatAttachArgs, ctx: ToolContext) -> None:
        channel = self._channel(ctx)
        if len(channel.reply) >= MAX_REPLY_FILES:
            raise RefusedError(f"{args.path} was not sent: a reply carries at most {MAX_REPLY_FILES} files and this "
                               "one has them already; send it in a later reply")
        if args.caption is not None and len(args.caption.encode("utf-8", "surrogatepass")) > MAX_CAPTION_BYTES:
            raise RefusedError(f"chat_attach caption is over {MAX_CAPTION_BYTES} bytes; shorten it or put the rest in "
                               "the reply text")
        resolved = os.path.realpath(absolute_path(args.path, ctx))
        clause = path_refusal(channel.rules(), args.path, resolved)
        if clause is None:
            try:
                clause = file_refusal(os.stat(resolved))
            except FileNotFoundError:
                clause = "it does not exist"
            except OSError as err:
                clause = f"it cannot be examined ({err.strerror})"
        if clause is not None:
            raise RefusedError(refused(args.path, clause))

    def summary(self, args: ChatAttachArgs, ctx: ToolContext) -> str:
        channel = self._channel(ctx)
        resolved = os.path.realpath(absolute_path(args.path, ctx))
        try:
            size = f" ({os.stat(resolved).st_size} bytes)"
        except OSError:
            size = ""
        caption = f" with the caption {short(args.caption, 200)!r}" if args.caption else ""
        return short(f"send {resolved}{size} to the {channel.product} chat {channel.conversation}{caption}")

    def worker_args(self, args: ChatAttachArgs, ctx: ToolContext) -> dict:
        channel = self._channel(ctx)
        return {"path": args.path, "absolute": absolute_path(args.path, ctx), "caption": args.caption,
                "rules": channel.rules().to_dict(),
                "channel": {"kind": channel.kind, "account": channel.account, "conversation": channel.conversation}}

    def complete(self, args: ChatAttachArgs, result: Result, ctx: ToolContext) -> dict:
        if result.ok and ctx.channel is not None:
            ctx.channel.reply.append(dict(result.value))
        return result.value

    def system_prompt_section(self, ctx: ToolContext) -> str | None:
        if ctx.channel is None:
            return None
        from scv.chat.prompt import chat_section
        return chat_section(ctx.channel)
