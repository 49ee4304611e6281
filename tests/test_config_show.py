"""`scv config show` as a real process: every key with its source, secrets as `…`, the recorded
agent imports compared as `scv agents status` compares them; and the walk over the Config
Structs, which shows a table added later with no other change."""

import json
from pathlib import Path

import msgspec
from click.testing import CliRunner

from scv.cli import main
from scv.config.load import ToolsConfig
from scv.config.view import MASK, settings_of
from tests.conftest import run_scv

SECRETS = ("sk-user-secret-1111", "Bearer hdr-secret-2222", "q-secret-3333", "pw-secret-4444",
           "sk-proj-prompt-5555555", "brave-secret-6666")
USER_CONFIG = '''[tools]
command_timeout_seconds = 900

[provider]
active = "relay"

[providers.relay]
model = "gpt-9"
base_url = "https://me:pw-secret-4444@relay.example/v1?api_key=q-secret-3333&region=eu"
api_key = "sk-user-secret-1111"
headers = { Authorization = "Bearer hdr-secret-2222", "X-Title" = "scv" }

[agent]
system_prompt = "Be brief. The key is sk-proj-prompt-5555555."
prefer = ["codex"]

[agents.codex]
use_for = "coding"

[web]
brave_api_key = "brave-secret-6666"
auto_approve_domains = ["docs.rs"]
'''


def configured(scv_home: Path, workspace: Path) -> None:
    (scv_home / "config.toml").write_text(USER_CONFIG)
    (workspace / ".scv").mkdir()
    (workspace / ".scv" / "config.toml").write_text("[tools]\noutput_limit_bytes = 4096\ncommand_timeout_seconds = 60\n")


def show(workspace: Path, *extra: str):
    proc = run_scv("config", "show", "-C", str(workspace), *extra)
    assert proc.returncode == 0, proc.stderr
    for secret in SECRETS:
        assert secret not in proc.stdout + proc.stderr
    return proc


def test_show_names_each_value_and_where_it_came_from(scv_home, workspace):
    configured(scv_home, workspace)
    lines = show(workspace).stdout.splitlines()
    assert lines[:2] == [f"# user file: {scv_home / 'config.toml'}", f"# project file: {workspace / '.scv/config.toml'}"]
    expected = {
        "[tools]": None,
        'approval_policy = "on-risk"': "default",
        "output_limit_bytes = 4096": "project",
        "command_timeout_seconds = 60": "project",          # the project's value wins over the user's 900
        "agent_timeout_seconds = 3600": "default",
        "[providers.relay]": None,
        'model = "gpt-9"': "user",
        'base_url = "https://me:…@relay.example/v1?api_key=…&region=eu"': "user",
        "api_key = …": "user",
        "headers = { Authorization = …, X-Title = … }": "user",
        "api_key_env = (unset)": "default",
        'wire_api = "responses"': "default",
        "system_prompt = …": "user",                         # it holds key material
        'prefer = ["codex"]': "user",
        "[agents.codex]": None,
        'use_for = "coding"': "user",
        "brave_api_key = …": "user",
        'brave_api_key_env = "BRAVE_API_KEY"': "default",    # a variable's name is no secret
        'auto_approve_domains = ["docs.rs"]': "user",
    }
    for text, source in expected.items():
        wanted = text if source is None else f"{text:<44} # {source}"
        assert wanted in lines, text
    assert lines[-1] == "# imports: none recorded (scv agents import)"


def test_show_json_has_the_nested_config_and_every_settings_source(scv_home, workspace):
    configured(scv_home, workspace)
    value = json.loads(show(workspace, "--json").stdout)
    assert value["files"] == {"user": {"path": str(scv_home / "config.toml"), "exists": True},
                              "project": {"path": str(workspace / ".scv" / "config.toml"), "exists": True}}
    relay = value["config"]["providers"]["relay"]
    assert relay["api_key"] == MASK and relay["headers"] == {"Authorization": MASK, "X-Title": MASK}
    assert relay["api_key_env"] is None and value["config"]["tools"]["output_limit_bytes"] == 4096
    sources = {entry["key"]: entry["source"] for entry in value["settings"]}
    assert sources["tools.output_limit_bytes"] == "project" and sources["providers.relay.model"] == "user"
    assert sources["tools.worker_memory_mb"] == "default" and sources["web.auto_approve_domains"] == "user"
    # Every key of every Struct is there, defaults included.
    assert {k for k in sources if k.startswith("tools.")} == {f"tools.{name}" for name in ToolsConfig.__struct_fields__}
    assert value["imports"] == []
    # The sandbox's mode and what this kernel supports, as scv tools --json reports them.
    assert value["sandbox"]["mode"] == "off" and "landlock_abi" in value["sandbox"]["kernel"]
    assert "# sandbox: off, network off; this kernel: Landlock ABI " in show(workspace).stdout


def test_show_without_any_file_is_all_defaults(scv_home, workspace):
    value = json.loads(show(workspace, "--json").stdout)
    assert value["files"]["user"]["exists"] is False and value["files"]["project"]["exists"] is False
    assert {entry["source"] for entry in value["settings"]} == {"default"}
    assert value["config"]["providers"] == {} and value["config"]["tools"]["approval_policy"] == "on-risk"


def test_a_broken_config_is_one_sentence_naming_the_file(scv_home, workspace):
    (scv_home / "config.toml").write_text("[tools]\nno_such_key = 1\n")
    proc = run_scv("config", "show", "-C", str(workspace))
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == f"scv: {scv_home / 'config.toml'}: unknown key tools.no_such_key; remove it or check its spelling\n"


def test_imports_are_compared_with_their_source_as_agents_status_does(scv_home, workspace, tmp_path):
    source = tmp_path / "my-codex"
    source.mkdir()
    (source / "config.toml").write_text('model = "gpt-6.2-sol"\n')
    assert run_scv("agents", "import", "codex", "--from", str(source)).returncode == 0
    lines = show(workspace).stdout.splitlines()
    assert lines[-1] == f"# import codex from {source}: up to date"
    (source / "config.toml").write_text('model = "gpt-7"\n')
    detail = (f"the source has changed since the import; run scv agents import codex --from {source} again")
    assert show(workspace).stdout.splitlines()[-1] == f"# import codex from {source}: {detail}"
    shown = json.loads(show(workspace, "--json").stdout)["imports"]
    assert shown == [{"agent": "codex", "source": str(source), "up_to_date": False, "detail": detail}]
    status = json.loads(run_scv("agents", "status", "--json").stdout)["agents"]
    assert [entry["import"] for entry in status if entry["agent"] == "codex"] == [
        {"source": str(source), "up_to_date": False, "detail": detail}]


class SandboxTools(msgspec.Struct, kw_only=True):
    approval_policy: str = "on-risk"
    sandbox: str = "none"


class Skills(msgspec.Struct, kw_only=True):
    max_skills: int = 64
    roots: list[str] = []


class LaterConfig(msgspec.Struct, kw_only=True):
    tools: SandboxTools = msgspec.field(default_factory=SandboxTools)
    skills: Skills = msgspec.field(default_factory=Skills)
    tokens: dict[str, str] = {}


def test_keys_added_to_the_structs_later_appear_without_other_work():
    config = LaterConfig(tools=SandboxTools(sandbox="bwrap"), skills=Skills(roots=["~/skills"]),
                         tokens={"github": "ghp_abcdefghijklmnop"})
    found = {s.key: (s.value, s.source) for s in settings_of(config, {"tools": {"sandbox": "bwrap"}},
                                                                  {"skills": {"roots": ["~/skills"]}})}
    assert found == {"tools.approval_policy": ("on-risk", "default"), "tools.sandbox": ("bwrap", "user"),
                     "skills.max_skills": (64, "default"), "skills.roots": (["~/skills"], "project"),
                     "tokens": ({"github": MASK}, "default")}


def test_config_show_has_help():
    result = CliRunner().invoke(main, ["config", "show", "--help"])
    text = " ".join(result.output.split())
    assert result.exit_code == 0 and "--json" in text and "where it came from (default, user file or project file)" in text
