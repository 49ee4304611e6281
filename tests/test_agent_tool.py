"""The `agent` tool's supervisor side: which agents are offered, choosing the agent, refusals
before anything launches (never put to the approver), the schema, the agent lines, the approval
summary, the system prompt section, and the `[agent]`/`[agents.*]` configuration."""

import json

import pytest

from scv.agents.session import open_agent_session
from scv.config.load import load_config
from scv.config.load import scv_home as scv_home_path
from scv.core.errors import ConfigError, RefusedError
from scv.core.messages import AgentPrivate, Call, Result
from scv.tools.agent.tool import AgentTool
from scv.tools.base import Risk, ToolContext
from scv.telemetry.spans import NO_SPAN
from scv.tools.registry import build_registry
from scv.tools.services import Services
from tests.agent_fakes import install, on_cli
from tests.fakes import setup_fake_home


@pytest.fixture
def user_home(tmp_path, monkeypatch):
    return setup_fake_home(tmp_path, monkeypatch, path=(tmp_path / "path-bin",))


@pytest.fixture
def offer(user_home, tmp_path, scv_home):
    """Installs fake agents, signed in where SCV checks sign-in by file."""
    signins = {"grok": (".grok/auth.json", '{"t": 1}'), "dsh": (".dsh/.credentials.yaml", "refs:\n  DEEPSEEK_API_KEY: k\n"),
               "pi": (".pi/agent/auth.json", '{"p": {"type": "api_key"}}')}

    def install_agents(*names: str) -> None:
        for name in names:
            install(user_home / ".local" / "bin", name, tmp_path / "log" / name).write("exit 0\n")
            if name in signins:
                where, text = signins[name]
                path = scv_home / "agents" / name / where
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text)
    return install_agents


@pytest.fixture
def context(workspace, scv_home):
    def make(config_text: str = "", depth: int = 0) -> ToolContext:
        (scv_home / "config.toml").write_text(config_text)
        return ToolContext(workspace=workspace, config=load_config(workspace), delegation_depth=depth)
    return make


def agent_tool(ctx: ToolContext) -> AgentTool:
    """The tool as a session builds it: the agents on offer are discovered now."""
    return AgentTool(Services(agents=open_agent_session(ctx.config, scv_home_path())))


def refused(ctx, raw, tool: AgentTool | None = None) -> str:
    with pytest.raises(RefusedError) as info:
        (tool or agent_tool(ctx)).parse(raw, ctx)
    return str(info.value)


def test_offered_agents_resolve_from_user_bin_then_path(offer, context, tmp_path, user_home):
    offer("codex", "claude")
    install(tmp_path / "path-bin", "pi", tmp_path / "log" / "pi").write("exit 0\n")
    install(user_home / ".grok" / "bin", "grok", tmp_path / "log" / "grok").write("exit 0\n")
    ctx = context()
    schema = agent_tool(ctx).schema(ctx)
    # grok and pi resolve, but their sign-in is checked by file and nothing is stored: not offered.
    assert schema["properties"]["agent"]["enum"] == ["claude", "codex"]
    scv_home = ctx.workspace.parent / "scv-home"
    (scv_home / "agents/grok/.grok").mkdir(parents=True)
    (scv_home / "agents/grok/.grok/config.toml").write_text(
        '[models]\ndefault = "grok-5"\n[models.main]\nid = "grok-5"\napi_key = "xai-1"\n')
    (scv_home / "agents/pi/.pi/agent").mkdir(parents=True)
    (scv_home / "agents/pi/.pi/agent/models.json").write_text('{"providers":{"scv":{"apiKey":"k"}}}')
    fresh = context()
    assert agent_tool(fresh).schema(fresh)["properties"]["agent"]["enum"] == ["claude", "codex", "grok", "pi"]
    assert "agent" in build_registry(fresh, agent_tool(fresh).services).names()


def test_no_agent_no_tool_and_depth_limit(offer, context):
    assert "agent" not in (lambda c: build_registry(c, agent_tool(c).services))(context()).names()
    offer("claude")
    assert "agent" in (lambda c: build_registry(c, agent_tool(c).services))(context(depth=1)).names()
    assert "agent" not in (lambda c: build_registry(c, agent_tool(c).services))(context(depth=2)).names()
    assert "agent" in (lambda c: build_registry(c, agent_tool(c).services))(context("[agent]\nmax_delegation_depth = 3\n", depth=2)).names()


def test_choosing_the_agent(offer, context):
    offer("claude", "codex", "dsh")
    ctx = context('[agent]\nprefer = ["pi", "codex", "claude"]\n')
    tool = agent_tool(ctx)
    assert tool.parse({"prompt": "x"}, ctx).name == "codex"
    assert tool.parse({"prompt": "x", "agent": "claude"}, ctx).name == "claude"
    assert tool.parse({"prompt": "x", "agent": " "}, ctx).name == "codex"
    assert refused(ctx, {"prompt": "x", "agent": "zcode"}) == (
        'agent "zcode" is not offered in this session; choose one of: claude, codex, dsh')
    no_default = context('[agent]\nprefer = ["pi"]\n')
    assert refused(no_default, {"prompt": "x"}) == (
        "name the agent: the user prefers none of the agents this session offers ([agent] prefer); "
        "choose one of: claude, codex, dsh")


def test_a_handle_names_its_agent(offer, context):
    offer("claude", "codex", "dsh")
    ctx = context()
    tool = agent_tool(ctx)
    conversations = tool.services.agents.conversations
    state_conversation = conversations.start("codex")
    conversations.begin_turn(state_conversation)
    assert conversations.end_turn(state_conversation, "thread-1", None)   # a handle the model was given
    assert tool.parse({"prompt": "x", "session": "codex-1"}, ctx).name == "codex"
    assert refused(ctx, {"prompt": "x", "session": "codex-1", "agent": "claude"}, tool) == (
        "conversation codex-1 belongs to codex, not claude; omit agent to continue it, or omit session to start "
        "a new conversation with claude")
    # The handle decides first, even when the named agent takes no session at all.
    assert refused(ctx, {"prompt": "x", "session": "codex-1", "agent": "dsh"}, tool) == (
        "conversation codex-1 belongs to codex, not dsh; omit agent to continue it, or omit session to start "
        "a new conversation with dsh")
    assert "not a conversation of this session" in refused(ctx, {"prompt": "x", "session": "thread-1"}, tool)
    conversations.begin_turn(state_conversation)
    with pytest.raises(RefusedError, match="^session busy"):
        tool.parse({"prompt": "x", "session": "codex-1"}, ctx)


@pytest.mark.parametrize("raw, message", [
    ({"agent": "dsh", "prompt": "x", "model": "m"},
     "dsh does not take model; these agents do: claude, codex. Omit model, or call one of them"),
    ({"agent": "dsh", "prompt": "x", "effort": "low"},
     "dsh does not take effort; these agents do: claude, codex. Omit effort, or call one of them"),
    ({"agent": "codex", "prompt": "-rf"}, "agent prompt cannot start with '-'"),
    ({"agent": "codex", "prompt": "x", "model": "-m"}, "cannot start with '-'"),
    ({"agent": "codex", "prompt": "x", "model": "@x"}, "cannot start with '@'"),
    ({"agent": "codex", "prompt": "x", "model": "a b"}, "is not a model name"),
    ({"agent": "codex", "prompt": "x", "model": "m" * 129}, "is not a model name"),
    ({"agent": "codex", "prompt": "x", "effort": "extreme"}, "is not one of low, medium, high, xhigh, max"),
    ({"agent": "codex", "prompt": "x", "cwd": "../up"}, "is outside the workspace"),
    ({"agent": "codex", "prompt": "x", "timeout_seconds": 20000}, "over the ceiling of 14400"),
    ({"agent": "codex", "prompt": "x", "flags": "--yolo"}, "agent has no argument 'flags'"),
])
def test_refused_before_approval(offer, context, raw, message):
    offer("claude", "codex", "dsh")
    assert message in refused(context(), raw)


def test_session_is_refused_only_on_a_backend_that_cannot_continue_a_conversation(offer, context):
    offer("claude", "codex", "dsh")
    on_cli = context('[agents.dsh]\ntransport = "resume"\n')
    assert refused(on_cli, {"agent": "dsh", "prompt": "x", "session": "dsh-1"}) == (
        "dsh does not take session; these agents do: claude, codex. Omit session, or call one of them")
    # dsh's ACP server is dsh itself, so by default it runs over ACP, where every agent continues.
    over_acp = context()
    assert "not a conversation of this session" in refused(over_acp, {"agent": "dsh", "prompt": "x",
                                                                       "session": "dsh-1"})
    assert agent_tool(over_acp).parse({"agent": "dsh", "prompt": "x"}, over_acp).backend.transport == "acp"


def test_refused_calls_never_reach_the_approver(offer, make_runner, scv_home):
    offer("dsh")
    asked = []
    runner = make_runner(approver=lambda *a: asked.append(a) or True)
    with pytest.raises(RefusedError):
        runner.call("agent", {"agent": "dsh", "prompt": "x", "model": "m"})
    assert asked == []


def test_blank_options_count_as_omitted(offer, context):
    offer("dsh")
    ctx = context()
    tool = agent_tool(ctx)
    plan = tool.parse({"agent": "dsh", "prompt": "x", "model": "", "effort": " ", "session": "",
                       "cwd": ""}, ctx)
    assert plan.model is None and plan.effort is None and plan.cwd is None


def test_schema_enum_options_and_required(offer, context, scv_home):
    offer("dsh", "grok")
    schema = (lambda c: agent_tool(c).schema(c))(context(on_cli()))
    props = schema["properties"]
    assert props["agent"]["enum"] == ["grok", "dsh"]
    assert "model" in props and "effort" in props and "session" not in props   # nobody here takes session
    over_acp = (lambda c: agent_tool(c).schema(c))(context())
    assert "session" in over_acp["properties"]       # every agent over ACP continues a conversation
    assert schema["required"] == ["prompt", "agent"]
    assert props["effort"]["enum"] == ["low", "medium", "high", "xhigh", "max"]
    with_default = (lambda c: agent_tool(c).schema(c))(context(on_cli('[agent]\nprefer = ["dsh"]\n')))
    assert with_default["required"] == ["prompt"]
    assert "omit it to use dsh" in with_default["properties"]["agent"]["description"]
    (scv_home / "agents/grok/.grok/auth.json").unlink()
    assert not {"model", "effort", "session"} & set((lambda c: agent_tool(c).schema(c))(context(on_cli()))["properties"])


def test_agent_lines_carry_the_users_notes(offer, context):
    offer("codex", "claude")
    ctx = context('[agents.codex]\nuse_for = "coding"\nmodel = "gpt-5.5"\neffort = "high"\n'
                  '[agents.claude]\nmodel = "opus"\npermissions = "full"\n')
    description = agent_tool(ctx).schema(ctx)["properties"]["agent"]["description"]
    assert ("- codex (Codex): OpenAI's coding agent; reads, edits, and runs code, with live web search under full "
            "permissions. Takes model (OpenAI model ID from the Codex configuration; not a Claude alias), effort, "
            "and session. The user's note on when to use it: coding. For that work, pass model gpt-5.5 and effort "
            "high; omit model and effort for other work so the agent uses its own default.") in description
    assert "- claude (Claude Code): Anthropic's coding agent" in description
    assert "Pass model opus unless the user asks for another." in description
    section = agent_tool(ctx).system_prompt_section(ctx)
    assert section.startswith("## Delegating work")
    assert "- codex (Codex)" in section and "- claude (Claude Code)" in section and "grok" not in section


def test_model_and_effort_descriptions_keep_the_agents_default(offer, context):
    offer("codex")
    schema = (lambda c: agent_tool(c).schema(c))(context())
    for option in ("model", "effort"):
        assert "Omit it to keep the agent's own default." in json.dumps(schema["properties"][option]), option


def test_approval_summary_names_the_agent_and_full_argv(offer, context, user_home):
    offer("claude", "codex")
    ctx = context('[agents.claude]\npermissions = "full"\n')
    tool = agent_tool(ctx)
    args = tool.parse({"agent": "claude", "prompt": "fix it", "model": "sonnet", "timeout_seconds": 60}, ctx)
    summary = tool.summary(args, ctx)
    exe = str(user_home / ".local" / "bin" / "claude")
    assert summary.startswith(f"agent claude: Launch {exe} with args ")
    shown = json.loads(summary.split(" with args ", 1)[1].split(f" in {ctx.workspace}", 1)[0])
    assert shown == ["-p", "--permission-mode", "bypassPermissions", "--output-format", "stream-json", "--verbose",
                     "--session-id", "<new session id>", "--model", "sonnet", "fix it"]
    assert "(timeout 60 s)" in summary and "Delegate risk" in summary and "FULL PERMISSIONS" in summary
    assert tool.risk(args, ctx) is Risk.DELEGATE and tool.declared_risk is Risk.DELEGATE
    plain = tool.parse({"agent": "codex", "prompt": "p" * 1000}, ctx)
    codex_summary = tool.summary(plain, ctx)
    assert "FULL PERMISSIONS" not in codex_summary and "p" * 400 not in codex_summary


@pytest.mark.parametrize("text, message", [
    ('[agent]\nprefer = ["zcode"]\n', "agent.prefer names the unknown agent 'zcode'"),
    ('[agents.zcode]\nuse_for = "x"\n', "[agents.zcode] is not a known agent"),
    ('[agents.codex]\nuse_for = "a\\nb"\n', "agents.codex.use_for must be one line"),
    ('[agents.codex]\nuse_for = "' + "x" * 501 + '"\n', "agents.codex.use_for is over 500 bytes"),
    ('[agents.dsh]\nmodel = "m"\n', "dsh does not take a model"),
    ('[agents.dsh]\neffort = "low"\n', "dsh does not take an effort"),
    ('[agents.codex]\nmodel = "-x"\n', "cannot start with '-'"),
    ('[agents.codex]\neffort = "huge"\n', "agents.codex.effort"),
    ('[agents.codex]\npermissions = "root"\n', "agents.codex.permissions"),
    ('[agent]\nmax_conversations = 0\n', "agent.max_conversations"),
])
def test_configuration_errors(scv_home, workspace, text, message):
    (scv_home / "config.toml").write_text(text)
    with pytest.raises(ConfigError) as info:
        load_config(workspace)
    assert message in str(info.value) and "config.toml" in str(info.value)


@pytest.mark.parametrize("text", ['[agent]\nprefer = ["codex"]\n', '[agents.codex]\npermissions = "full"\n',
                                  '[agent]\nmax_delegation_depth = 5\n'])
def test_a_project_cannot_set_agent_keys(workspace, text):
    (workspace / ".scv").mkdir()
    (workspace / ".scv" / "config.toml").write_text(text)
    with pytest.raises(ConfigError) as info:
        load_config(workspace)
    assert "may not be set by a project config" in str(info.value)


def test_tool_contract_with_agents_on_offer(offer, context):
    """The conformance checks of every tool, in a session that offers agents (the shared
    conformance test sees none installed). With claude and codex on offer every option is in the
    schema, and with a preferred agent only the prompt is required."""
    import msgspec
    from scv.tools.agent.tool import AgentArgs
    offer("claude", "codex")
    ctx = context('[agent]\nprefer = ["codex"]\n')
    spec = agent_tool(ctx)
    schema = spec.schema(ctx)
    assert schema["type"] == "object" and schema["additionalProperties"] is False
    assert set(schema["properties"]) == {f.encode_name for f in msgspec.structs.fields(AgentArgs)}
    assert schema["required"] == ["prompt"]
    args = spec.parse(msgspec.json.encode(spec.example), ctx)
    summary = spec.summary(args, ctx)
    assert summary.startswith("agent codex: Launch ") and "\n" not in summary and len(summary) < 2000
    assert spec.timeout_seconds(args, ctx) == 7200
    sent = []

    class Recording:
        cancel = None
        span = NO_SPAN

        def under(self, span):
            return self

        def message(self, executor, args, *, handle=None):
            return Call(tool="agent", executor=executor, args=args, workspace=str(ctx.workspace), handle="i/c-1",
                        timeout_seconds=7200.0, output_limit_bytes=65536, id="c-1")

        def fresh(self, message, cancel=None):
            sent.append(message)
            return Result(ok=True, value={"agent": "codex", "status": "completed", "reply": "done"},
                          private=AgentPrivate(vendor_session="thread-9", cwd=str(ctx.workspace), available=True))

    result = spec.run(args, ctx, Recording())
    msgspec.msgpack.encode(sent[0])
    assert sent[0].args["argv"][-1] == spec.example["prompt"] and sent[0].args["conversation"] == "codex-1"
    assert result.value["session"] == "codex-1" and result.value["turn"] == 1
    with pytest.raises(RefusedError, match="agent"):
        spec.parse({**spec.example, "no_such_argument": 1}, ctx)
    with pytest.raises(RefusedError, match="prompt"):
        spec.parse({"agent": "codex"}, ctx)


def test_a_delegated_scv_inherits_its_depth(offer, tmp_path, scv_home, user_home):
    from tests.conftest import run_scv, scv_env
    offer("claude")
    env = scv_env(HOME=str(user_home), SCV_HOME=str(scv_home))

    def tools(**extra: str) -> list[str]:
        listed = run_scv("tools", "-C", str(tmp_path), env={**env, **extra})
        assert listed.returncode == 0, listed.stderr
        return [row.split()[0] for row in listed.stdout.splitlines() if row.strip()]

    assert "agent" in tools() and "agent" in tools(SCV_DELEGATION_DEPTH="1")
    assert "agent" not in tools(SCV_DELEGATION_DEPTH="2")
    assert "agent" not in tools(SCV_DELEGATION_DEPTH="junk")


@pytest.mark.parametrize("text, signed_in", [
    ("refs:\n  DEEPSEEK_API_KEY: sk-1\n", True),
    ("version: 1\nrefs:\n  OTHER: x\n  DEEPSEEK_API_KEY: \"sk-1\"  # from scv agents login dsh\n", True),
    ("refs: {DEEPSEEK_API_KEY: sk-1}\n", True),
    ("refs:\n  DEEPSEEK_API_KEY: \"\"\n", False),
    ("refs:\n  DEEPSEEK_API_KEY:\n", False),
    ("DEEPSEEK_API_KEY: sk-1\n", False),                 # not under refs
    ("other:\n  DEEPSEEK_API_KEY: sk-1\n", False),
    ("# refs:\n#   DEEPSEEK_API_KEY: sk-1\n", False),
])
def test_dsh_counts_as_signed_in_only_with_a_stored_key(offer, context, scv_home, text, signed_in):
    offer("codex", "dsh")
    (scv_home / "agents/dsh/.dsh/.credentials.yaml").write_text(text)
    assert ("dsh" in (lambda c: agent_tool(c).schema(c))(context())["properties"]["agent"]["enum"]) == signed_in


@pytest.mark.parametrize("profile, environ, signed_in", [
    ('[models.main]\nid = "grok-5"\napi_key = "xai-1"\n', {}, True),
    ('[models.grok-5]\napi_key = "xai-1"\n', {}, True),                      # matched by catalog key
    ('[models.main]\nid = "grok-5"\nenv_key = "MY_GROK_TOKEN"\n', {"MY_GROK_TOKEN": "t"}, True),
    ('[models.main]\nid = "grok-5"\nenv_key = "MY_GROK_TOKEN"\n', {}, False),   # not set
    ('[models.main]\nid = "grok-5"\nenv_key = "XAI_API_KEY"\n', {"XAI_API_KEY": "t"}, False),  # SCV removes it
    ('[models.other]\nid = "grok-4"\napi_key = "xai-1"\n', {}, False),     # not the default's profile
])
def test_grok_sign_in_by_config(user_home, scv_home, tmp_path, profile, environ, signed_in):
    from scv.agents.offered import discover
    install(user_home / ".local" / "bin", "grok", tmp_path / "log").write("exit 0\n")
    config = scv_home / "agents/grok/.grok/config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('[models]\ndefault = "grok-5"\n' + profile)
    offered = discover({"HOME": str(user_home), "PATH": "/usr/bin:/bin", **environ}, home=scv_home)
    assert ("grok" in offered) == signed_in


def test_defaults_of_the_agent_keys(offer, context):
    offer("codex")
    ctx = context()
    tool = agent_tool(ctx)
    assert tool.timeout_seconds(tool.parse({"agent": "codex", "prompt": "x"}, ctx), ctx) == 3600
    assert agent_tool(ctx).schema(ctx)["properties"]["timeout_seconds"]["anyOf"][0]["maximum"] == 14400
    conversations = tool.services.agents.conversations
    assert conversations.max == 8 and conversations.idle_seconds == 86400


class Untraced:
    """A launch for a backend that starts no worker: only its (absent) span is read."""
    span = NO_SPAN

    def under(self, span):
        return self


def test_the_fake_backend_through_choose_backend_keeps_continues_and_forgets_conversations(offer, context):
    """The agent tool's own logic around a turn, on the fake backend the session chooses."""
    from scv.tools.agent.fake import FakeBackend, FakeTurn, SeenTurn
    offer("codex", "claude")
    ctx = context()
    fake = FakeBackend([FakeTurn(reply="one"), FakeTurn(reply="two"), FakeTurn(vendor_session=None),
                        FakeTurn(status="failed", available=False, vendor_session=None)])
    tool = agent_tool(ctx)
    tool.services.agents.choose_backend = lambda offered: fake

    def call(raw: dict) -> dict:
        planned = tool.parse(json.dumps(raw), ctx)      # checked and planned, as before approval
        assert planned.backend is fake
        assert tool.summary(planned, ctx).startswith("agent codex (a fake backend")
        result = tool.run(planned, ctx, launch=Untraced())     # the fake backend launches nothing
        assert result.private is None       # the supervisor's part never reaches the model
        return result.value

    first = call({"agent": "codex", "prompt": "start"})
    assert first["status"] == "completed" and first["reply"] == "one" and first["turn"] == 1
    second = call({"agent": "codex", "prompt": "go on", "session": first["session"]})
    assert second["session"] == first["session"] and second["turn"] == 2
    forgotten = call({"agent": "codex", "prompt": "no session reported"})
    assert "session" not in forgotten       # a first turn that reported no session keeps no conversation
    failed = call({"agent": "codex", "prompt": "cannot run"})
    assert failed["status"] == "failed" and "claude" in failed["fallback"]
    assert fake.seen[:2] == [SeenTurn("start", first["session"], None),
                             SeenTurn("go on", first["session"], "fake-session-1")]
    assert fake.turns == []
