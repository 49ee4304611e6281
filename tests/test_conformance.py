"""One conformance test over every built-in tool: the extension contract, checked the same way."""

import importlib
import inspect
import os
import re
from pathlib import Path

import msgspec
import pytest

from scv.agents.session import open_agent_session
from scv.chat.channel import ChatChannel
from scv.config.load import load_config
from scv.core.errors import RefusedError
from scv.core.messages import Call, Result
from scv.jobs.manager import Jobs
from scv.skills.index import session_skills
from scv.telemetry.spans import NO_SPAN
from scv.tools.base import Risk, ToolContext, ToolSpec
from scv.tools.catalog import BUILTIN_SPECS, LISTING, NEEDS
from scv.tools.chat_keep import ChatKeepTool
from scv.tools.registry import BUILTIN, Registry, executor_modules, spec_class
from scv.tools.services import Services

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def ctx(workspace, scv_home, tmp_path, user_home):
    """A session in which every built-in tool is offered: fake agent CLIs on the user's path, a
    configured search backend, a skill, and a chat channel whose bridge named its log (its media
    folder is the one in chat_keep's example, so that example is this chat's file)."""
    from tests.agent_fakes import install
    for name in ("claude", "codex"):
        install(user_home / ".local" / "bin", name, tmp_path / "log" / name).write("exit 0\n")
    (scv_home / "config.toml").write_text('[agent]\nprefer = ["codex"]\n\n'
                                          '[web]\nsearch = "searxng"\nsearxng_url = "http://127.0.0.1:9"\n')
    skill = scv_home / "skills" / "release-checks"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: release-checks\ndescription: Checks before a release.\n---\n")
    (workspace / "out").mkdir()
    (workspace / "out" / "chart.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    config = load_config(workspace)
    folder = str(scv_home / "archive" / "wechat" / "default" / "wxid_owner")
    channel = ChatChannel(kind="wechat", account="default", conversation="wxid_owner", home=str(scv_home),
                          archive=str(scv_home / "archive"), conversation_dir=folder, log=folder,
                          media=os.path.dirname(ChatKeepTool.example["path"]))
    return ToolContext(workspace=workspace, config=config, skills=session_skills(workspace, config), channel=channel)


@pytest.fixture
def services(ctx, scv_home):
    agents = open_agent_session(ctx.config, scv_home)
    yield Services(agents=agents, jobs=Jobs(4, "on-risk", False, lambda build: None))
    agents.close()


class RecordingLaunch:
    """A Launch that records the messages a spec's run sends instead of forking workers."""

    cancel = None
    span = NO_SPAN

    def __init__(self, supervisor):
        self.supervisor, self.sent = supervisor, []

    def message(self, executor, args, *, handle=None):
        call_id, own = self.supervisor.new_handle()
        return Call(tool="t", executor=executor, args=args, workspace="/", handle=handle or own, id=call_id,
                    timeout_seconds=1.0, output_limit_bytes=1024)

    def fresh(self, message, cancel=None):
        self.sent.append(message)
        return Result(ok=True, value={})

    def live(self, worker, message, cancel=None):
        return self.fresh(message)

    def start_live(self):
        raise AssertionError("a built-in tool started a live worker in the conformance session")

    def under(self, span):
        return self


@pytest.mark.parametrize("spec_class", BUILTIN, ids=lambda c: c.name)
def test_tool_contract(spec_class, ctx, services, supervisor):
    check_contract(spec_class(services), ctx, supervisor)


# An MCP server's tool as a session offers it (scv/mcp/fake.py stands in for the server): one
# with required and optional arguments of several types.
MCP_LISTED = [{"name": "get_issue", "description": "Fetch one issue of a repository.", "read_only": True,
               "input_schema": {"type": "object", "required": ["repo", "number"],
                                "properties": {"repo": {"type": "string"}, "number": {"type": "integer"},
                                               "with-comments": {"type": "boolean"}}}}]


def test_mcp_tool_contract(ctx, services, supervisor):
    from scv.mcp.fake import FakeMcpServers
    from scv.tools.registry import mcp_class
    fake = FakeMcpServers({"github": MCP_LISTED})
    services.mcp = fake
    (tool,) = fake.offer()[1]
    spec = mcp_class()(services, tool)
    assert spec.name == "mcp__github__get_issue" and spec.declared_risk is Risk.READ_ONLY
    check_contract(spec, ctx, supervisor)
    assert fake.sent and fake.sent[0].args == {"op": "call", "tool": "get_issue", "arguments": spec.example}
    # Values are checked against the server's schema before approval, with one sentence.
    with pytest.raises(RefusedError, match="at 'number'"):
        spec.parse({"repo": "scv", "number": "seven"}, ctx)
    # Optional arguments not given are not sent.
    assert spec.worker_args(spec.parse({"repo": "a", "number": 1, "with-comments": True}, ctx), ctx) == \
        {"repo": "a", "number": 1, "with-comments": True}
    assert spec.worker_args(spec.parse({"repo": "a", "number": 1}, ctx), ctx) == {"repo": "a", "number": 1}


def check_contract(spec: ToolSpec, ctx, supervisor) -> None:
    spec_class = type(spec)
    family = spec_class.name      # a built-in tool's own name; "mcp" for every MCP server's tool
    assert spec.enabled(ctx), f"{spec.name} is not offered even in a session set up to offer every tool"
    # Name, description, files: scv/tools/<name>.py beside workers/<name>.py (a tool with parts of
    # its own has a folder: scv/tools/<name>/tool.py, as the agent tool has for its backends).
    assert re.fullmatch(r"[a-z][a-z0-9_]{0,63}", spec.name)
    assert len(spec.description) > 20
    tools = ROOT / "scv" / "tools"
    assert Path(inspect.getfile(spec_class)) in (tools / f"{family}.py", tools / family / "tool.py")
    module_name, _, function = spec.executor.partition(":")
    assert module_name == f"workers.{family}"
    executor = getattr(importlib.import_module(module_name), function)
    assert list(inspect.signature(executor).parameters) == ["args", "ctx"]
    assert isinstance(spec.declared_risk, Risk)
    # Arguments: a Struct that forbids unknown fields, whose schema is generated from it.
    assert issubclass(spec.Args, msgspec.Struct)
    assert spec.Args.__struct_config__.forbid_unknown_fields
    schema = spec.schema(ctx)
    assert schema["type"] == "object" and schema["additionalProperties"] is False
    fields = msgspec.structs.fields(spec.Args)
    assert set(schema["properties"]) == {f.encode_name for f in fields}
    required = {f.encode_name for f in fields if f.required}
    assert set(schema.get("required", [])) == required
    # The example is valid; its risk and summary are decided before approval.
    args = spec.parse(msgspec.json.encode(spec.example), ctx)
    assert isinstance(spec.risk(args, ctx), Risk)
    summary = spec.summary(args, ctx)
    assert summary and "\n" not in summary and len(summary) < 2000
    assert spec.timeout_seconds(args, ctx) > 0
    if spec.background(args, ctx) is None:
        # What its run sends to a worker crosses the pipe, to an executor the fork point preloads.
        launch = RecordingLaunch(supervisor)
        spec.run(args, ctx, launch)
        assert launch.sent, f"{spec.name} ran without sending a call to a worker"
        for message in launch.sent:
            msgspec.msgpack.encode(message)
            assert message.executor.partition(":")[0] in executor_modules()
    # Bad arguments are refused with one sentence naming the tool.
    with pytest.raises(RefusedError, match=spec.name):
        spec.parse({**spec.example, "no_such_argument": 1}, ctx)
    for name in required:
        with pytest.raises(RefusedError, match=name):
            spec.parse({k: v for k, v in spec.example.items() if k != name}, ctx)
    with pytest.raises(RefusedError, match=spec.name):
        spec.parse(b"[1, 2]", ctx)


def test_names_are_unique_and_duplicates_are_rejected():
    names = [spec_class.name for spec_class in BUILTIN]
    assert len(names) == len(set(names))
    # The lazy table's keys are the names its specs declare, so a lookup finds the right one.
    assert [spec_class(name).name for name in BUILTIN_SPECS] == list(BUILTIN_SPECS)
    assert [spec_class(name).executor.partition(":")[0] for name in BUILTIN_SPECS] == \
        [executor for _, executor in BUILTIN_SPECS.values()]
    # What `scv tools` lists without importing a spec is what the specs say.
    assert {name: (spec_class(name).declared_risk.value, spec_class(name).description.split(". ")[0])
            for name in BUILTIN_SPECS} == LISTING
    assert set(NEEDS) <= set(BUILTIN_SPECS)
    registry = Registry()
    registry.register(BUILTIN[0]())
    with pytest.raises(ValueError, match="already registered"):
        registry.register(BUILTIN[0]())
