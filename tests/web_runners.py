"""Runners for the web tests: the real supervisor, with the web tools built the way only tests
may build them (web_fetch allowed to reach 127.0.0.1 at named ports and to trust a test
certificate authority, web_search pointed at a fake Brave endpoint)."""

from pathlib import Path

import msgspec

from scv.config.load import Config
from scv.session.calls import ToolRunner
from scv.supervision.approval import approve_all
from scv.tools.base import ToolContext
from scv.tools.registry import Registry
from scv.tools.web_fetch import WebFetchTool
from scv.tools.web_search import BRAVE_ENDPOINT, WebSearchTool


def web_config(tools: dict | None = None, **web) -> Config:
    return msgspec.convert({"tools": tools or {}, "web": web}, Config)


def web_runner(supervisor, workspace: Path, config: Config, ports=(), approver=approve_all,
               brave_endpoint: str = BRAVE_ENDPOINT, ca_bundle: str | None = None) -> ToolRunner:
    ctx = ToolContext(workspace=workspace, config=config)
    registry = Registry()
    registry.register(WebFetchTool(loopback_ports=frozenset(ports), ca_bundle=ca_bundle))
    search = WebSearchTool(brave_endpoint=brave_endpoint)
    if search.enabled(ctx):
        registry.register(search)
    return ToolRunner(supervisor, registry, ctx, approver)
