"""What the chat tests share: a chat channel's session context and runner (real workers), files
a chat user sent, and timestamps with an offset, as a bridge writes them."""

import os
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from scv.chat.channel import ChatChannel, open_channel
from scv.config.load import Config, load_config
from scv.core.chat.layout import make_private_dirs
from scv.session.calls import ToolRunner
from scv.supervision.approval import approve_all
from scv.tools.base import ToolContext
from scv.tools.registry import build_registry

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 24
TZ = timezone(timedelta(hours=8))


def at(*args: int) -> datetime:
    return datetime(*args, tzinfo=TZ)


def channel_ctx(workspace: Path, conversation: str = "wxid_owner", log: bool = True, config: Config | None = None,
                account: str = "default", keep_days: int | None = 7) -> ToolContext:
    config = config or load_config(workspace)
    probe = open_channel("wechat", account, conversation, None, keep_days, config)
    channel = open_channel("wechat", account, conversation, probe.conversation_dir if log else None, keep_days,
                           config)
    return ToolContext(workspace=workspace, config=config, channel=channel)


def runner_for(supervisor, ctx: ToolContext) -> ToolRunner:
    return ToolRunner(supervisor, build_registry(ctx), ctx, approve_all)


def sent_file(channel: ChatChannel, name: str, data: bytes = PNG) -> Path:
    """A file the chat's user sent, as the bridge saves it in the chat media."""
    make_private_dirs(channel.media)
    path = Path(channel.media) / name
    path.write_bytes(data)
    return path


def call(runner: ToolRunner, tool: str, **args):
    return runner.call(tool, args)


def outbox_names(channel: ChatChannel) -> list[str]:
    try:
        return sorted(os.listdir(channel.outbox))
    except FileNotFoundError:
        return []


@pytest.fixture
def ctx(workspace, scv_home) -> ToolContext:
    """A chat session's context whose bridge named its log (import it with `runner`)."""
    return channel_ctx(workspace)


@pytest.fixture
def runner(supervisor, ctx) -> ToolRunner:
    return runner_for(supervisor, ctx)
