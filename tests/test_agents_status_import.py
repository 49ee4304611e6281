"""`scv agents status`, `login pi`, and `import codex` through real `python -m scv` processes:
status commands replayed from the real CLIs' captures, pi's own files kept alongside other
providers, and the Codex snapshot with its digest record. No key ever appears in any output."""

import json
import shlex
import stat
from pathlib import Path

import pytest

from tests.agent_fakes import CAPTURES
from tests.conftest import run_scv, scv_env
from tests.delegation_fakes import fake_agent


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def status_of(agent: str, env: dict | None = None) -> dict:
    proc = run_scv("agents", "status", "--json", env=env)
    assert proc.returncode == 0, proc.stderr
    return {entry["agent"]: entry for entry in json.loads(proc.stdout)["agents"]}[agent]


def replay(capture: Path, exit_code: int, to_stderr: bool = False) -> str:
    return f"cat {shlex.quote(str(capture))}{' >&2' if to_stderr else ''}\nexit {exit_code}\n"


@pytest.mark.parametrize("capture,summary,signed_in", [
    ("auth_status_api_key", "signed in (API key)", True),
    ("auth_status_signed_out", "signed out", False),
])
def test_claude_status_is_its_own_status_command_summarized(user_home, tmp_path, scv_home, capture, summary, signed_in):
    meta = json.loads((CAPTURES / "claude" / f"{capture}.meta.json").read_text())
    fake = fake_agent(tmp_path, "claude", replay(CAPTURES / "claude" / f"{capture}.stdout.txt", meta["exit_code"]))
    entry = status_of("claude", scv_env(ANTHROPIC_API_KEY="sk-ant-inherited", SCV_HOME=str(scv_home)))
    assert (entry["summary"], entry["signed_in"], entry["installed"]) == (summary, signed_in, True)
    assert fake.calls() == [["auth", "status"]]
    env = fake.env()
    assert env["HOME"] == str(scv_home / "agents" / "claude") and "ANTHROPIC_API_KEY" not in env


def test_claude_account_status_names_the_plan_never_the_email(user_home, tmp_path):
    status = {"loggedIn": True, "authMethod": "claude.ai", "subscriptionType": "max",
              "email": "someone@example.com", "orgName": "Someone's Org"}
    fake_agent(tmp_path, "claude", f"echo {shlex.quote(json.dumps(status))}\nexit 0\n")
    proc = run_scv("agents", "status")
    assert "claude signed in (Claude account, max)" in proc.stdout
    assert "someone@example.com" not in proc.stdout + proc.stderr and "Org" not in proc.stdout


@pytest.mark.parametrize("capture,summary", [("codex_login_status_api_key", "signed in (API key)"),
                                             ("codex_login_status_signed_out", "signed out")])
def test_codex_status_never_shows_the_part_of_the_key_codex_prints(user_home, tmp_path, capture, summary):
    meta = json.loads((CAPTURES / "codex" / f"{capture}.meta.json").read_text())
    fake = fake_agent(tmp_path, "codex", replay(CAPTURES / "codex" / f"{capture}.stderr.txt", meta["exit_code"],
                                                to_stderr=True))
    proc = run_scv("agents", "status")
    assert f"codex  {summary}" in proc.stdout
    assert "sk-fake" not in proc.stdout + proc.stderr
    assert fake.calls() == [["login", "status"]]


CODEX_WARNING = ("WARNING: proceeding, even though we could not create PATH aliases: Refusing to create helper "
                 "binaries under temporary dir \"/tmp\"\n")
CODEX_401 = ("Error: unexpected status 401 Unauthorized: Incorrect API key provided: sk-fake***56789. You can find "
             "your API key at the provider's dashboard., url: http://127.0.0.1:9/v1/responses\n")


@pytest.mark.parametrize("stderr,exit_code,summary,signed_in", [
    # A 401 answer names "API key": only the exit status says it is not a sign-in.
    (CODEX_WARNING + CODEX_401, 1, "sign-in refused (401 Unauthorized)", False),
    (CODEX_WARNING + "API key configured - sk-fake-***56789\n" + CODEX_401, 1,
     "sign-in refused (401 Unauthorized)", False),
    (CODEX_WARNING + "Error: failed to read auth.json: API key file is corrupt\n", 1,
     "status unknown: codex login status exited with status 1", None),
    (CODEX_WARNING + "Logged in using ChatGPT\n", 0, "signed in (ChatGPT account)", True),
    (CODEX_WARNING + "something new the captures do not show\n", 0, "signed in", True),
])
def test_codex_status_is_decided_by_its_exit_status_first(user_home, tmp_path, stderr, exit_code, summary, signed_in):
    fake_agent(tmp_path, "codex", f"printf '%s' {shlex.quote(stderr)} >&2\nexit {exit_code}\n")
    entry = status_of("codex")
    assert (entry["summary"], entry["signed_in"]) == (summary, signed_in)
    proc = run_scv("agents", "status")
    advice = " (scv agents login codex)" if signed_in is False else ""
    assert f"codex  {summary}{advice}\n" in proc.stdout
    assert "sk-fake" not in proc.stdout + proc.stderr


def test_uninstalled_agents_say_so(user_home):
    proc = run_scv("agents", "status", "--json")
    entries = json.loads(proc.stdout)["agents"]
    assert [e["agent"] for e in entries] == ["claude", "codex", "grok", "dsh", "pi", "scv"]
    for entry in entries[:-1]:
        assert entry["installed"] is False and entry["summary"].startswith("not installed")
    # The nested SCV needs no install (the running SCV nests itself), only a provider.
    assert entries[-1]["installed"] is True and entries[-1]["summary"] == "signed out"


def test_grok_status_reads_its_files_only(user_home, tmp_path, scv_home):
    fake = fake_agent(tmp_path, "grok", "exit 0\n")
    folder = scv_home / "agents" / "grok" / ".grok"
    folder.mkdir(parents=True)
    assert status_of("grok")["summary"] == "signed out"
    (folder / "config.toml").write_text('[models]\ndefault = "grok-5"\n[models.main]\nid = "grok-5"\n'
                                        'api_key = "xai-config-secret-4444"\n')
    proc = run_scv("agents", "status")
    assert 'grok   signed in (API key in config, model "grok-5")' in proc.stdout
    assert "xai-config-secret-4444" not in proc.stdout
    (folder / "auth.json").write_text('{"access_token": "grok-token-5555"}')
    assert status_of("grok")["summary"] == "signed in (grok login)"
    assert fake.calls() == []          # the CLI itself is never run for Grok's status


PI_KEY = "sk-pi-secret-6666"


def test_login_pi_openai_compatible_writes_pis_own_files_and_keeps_the_rest(user_home, tmp_path, scv_home):
    folder = scv_home / "agents" / "pi" / ".pi" / "agent"
    folder.mkdir(parents=True)
    (folder / "models.json").write_text(json.dumps({"providers": {"other": {"baseUrl": "http://o.example/v1",
                                                                            "api": "openai-completions"}}}))
    (folder / "settings.json").write_text(json.dumps({"theme": "dark", "defaultProvider": "other"}))
    (folder / "auth.json").write_text(json.dumps({"anthropic": {"type": "oauth", "refresh": "r"}}))
    proc = run_scv("agents", "login", "pi", "--openai-compatible", "--base-url", "https://relay.example/v1/",
                   "--wire-api", "responses", "--model", "gpt-9", input=PI_KEY + "\n")
    assert proc.returncode == 0, proc.stderr
    models = json.loads((folder / "models.json").read_text())
    assert models["providers"]["other"]["baseUrl"] == "http://o.example/v1"
    assert models["providers"]["scv"] == {"baseUrl": "https://relay.example/v1", "api": "openai-responses",
                                          "models": [{"id": "gpt-9"}],
                                          "compat": {"sessionAffinityFormat": "openai-nosession"}}
    auth = json.loads((folder / "auth.json").read_text())
    assert auth["scv"] == {"type": "api_key", "key": PI_KEY} and "anthropic" in auth
    assert json.loads((folder / "settings.json").read_text()) == {"theme": "dark", "defaultProvider": "scv",
                                                                  "defaultModel": "gpt-9"}
    for name in ("models.json", "auth.json", "settings.json"):
        assert mode(folder / name) == 0o600
    assert sorted(p.name for p in folder.iterdir()) == ["auth.json", "models.json", "settings.json"]
    fake_agent(tmp_path, "pi", "exit 0\n")
    status = run_scv("agents", "status")
    assert ("pi     signed in (default provider scv; API openai-responses; host relay.example; model gpt-9; "
            "stored sign-ins: anthropic, scv)") in status.stdout
    for output in (proc.stdout, proc.stderr, status.stdout):
        assert PI_KEY not in output
    proc = run_scv("agents", "logout", "pi")
    assert proc.returncode == 0, proc.stderr
    assert not (folder / "auth.json").exists()
    assert list(json.loads((folder / "models.json").read_text())["providers"]) == ["other"]
    assert json.loads((folder / "settings.json").read_text()) == {"theme": "dark"}
    assert status_of("pi")["signed_in"] is False


def test_login_pi_asks_for_what_is_missing_on_stdin(user_home, scv_home):
    proc = run_scv("agents", "login", "pi", "--openai-compatible",
                   input=f"http://127.0.0.1:9/v1\nchat\nlocal-model\n{PI_KEY}\n")
    assert proc.returncode == 0, proc.stderr
    folder = scv_home / "agents" / "pi" / ".pi" / "agent"
    provider = json.loads((folder / "models.json").read_text())["providers"]["scv"]
    assert provider == {"baseUrl": "http://127.0.0.1:9/v1", "api": "openai-completions",
                        "models": [{"id": "local-model"}]}
    assert PI_KEY not in proc.stdout + proc.stderr


@pytest.mark.parametrize("args,sentence", [
    (["--base-url", "ftp://x"], "must start with http:// or https://"),
    (["--base-url", "https://x.example", "--wire-api", "grpc"], "wire API must be one of: responses, chat"),
    (["--", PI_KEY], "never accepted as an argument"),
])
def test_login_pi_refuses_bad_values_before_writing(user_home, scv_home, args, sentence):
    proc = run_scv("agents", "login", "pi", "--openai-compatible", *args, input="m\n" + PI_KEY + "\n")
    assert proc.returncode == 2 and sentence in proc.stderr
    assert PI_KEY not in proc.stderr and not (scv_home / "agents" / "pi" / ".pi").exists()


def test_login_pi_refuses_to_touch_a_broken_models_file(user_home, scv_home):
    folder = scv_home / "agents" / "pi" / ".pi" / "agent"
    folder.mkdir(parents=True)
    (folder / "models.json").write_text("{not json")
    proc = run_scv("agents", "login", "pi", "--openai-compatible", "--base-url", "https://r.example",
                   "--wire-api", "chat", "--model", "m", input=PI_KEY + "\n")
    assert proc.returncode == 1 and "models.json is not readable JSON" in proc.stderr
    assert (folder / "models.json").read_text() == "{not json" and not (folder / "auth.json").exists()


def test_login_pi_opens_pi_in_its_private_home(user_home, tmp_path, scv_home):
    fake = fake_agent(tmp_path, "pi", "exit 3\n")
    proc = run_scv("agents", "login", "pi", env=scv_env(OPENAI_API_KEY="sk-inherited", SCV_HOME=str(scv_home)))
    assert proc.returncode == 3 and "run /login" in proc.stderr and "/quit" in proc.stderr
    assert fake.calls() in ([[]], [[""]])      # no arguments (the recorder's printf writes one empty field)
    env = fake.env()
    assert env["PI_CODING_AGENT_DIR"] == str(scv_home / "agents" / "pi" / ".pi" / "agent")
    assert "OPENAI_API_KEY" not in env


CODEX_CONFIG = '''model = "gpt-6.2-sol"
model_provider = "relay"
model_reasoning_effort = "high"
sandbox_mode = "workspace-write"
approval_policy = "never"

[model_providers.relay]
name = "Relay"
base_url = "https://relay.example/v1"
wire_api = "responses"
env_key = "RELAY_API_KEY"
'''
CODEX_KEY = "sk-codex-import-7777"


@pytest.fixture
def codex_source(tmp_path) -> Path:
    source = tmp_path / "my-codex"
    source.mkdir()
    (source / "config.toml").write_text(CODEX_CONFIG)
    (source / "auth.json").write_text(json.dumps({"OPENAI_API_KEY": CODEX_KEY, "tokens": None}))
    return source


def test_import_codex_copies_config_and_an_api_key(user_home, tmp_path, scv_home, codex_source):
    proc = run_scv("agents", "import", "codex", "--from", str(codex_source))
    assert proc.returncode == 0, proc.stderr
    home = scv_home / "agents" / "codex"
    assert (home / "config.toml").read_text() == CODEX_CONFIG
    assert json.loads((home / "auth.json").read_text())["OPENAI_API_KEY"] == CODEX_KEY
    assert mode(home / "config.toml") == 0o600 and mode(home / "auth.json") == 0o600 and mode(home) == 0o700
    for line in ("model = gpt-6.2-sol", "model_provider = relay", "sandbox_mode = workspace-write",
                 "approval_policy = never", "auth.json copied"):
        assert line in proc.stdout
    assert "RELAY_API_KEY (env_key): SCV removes it" in proc.stderr
    record_path = scv_home / "state" / "imports" / "codex.json"
    record = json.loads(record_path.read_text())
    assert mode(record_path) == 0o600 and len(record["digest"]) == 64
    assert CODEX_KEY not in record_path.read_text() and "relay.example" not in record_path.read_text()
    assert CODEX_KEY not in proc.stdout + proc.stderr
    fake_agent(tmp_path, "codex", "echo 'Not logged in' >&2\nexit 1\n")
    assert status_of("codex")["import"]["detail"] == "up to date"
    (codex_source / "config.toml").write_text(CODEX_CONFIG.replace("high", "low"))
    status = run_scv("agents", "status")
    assert (f"imported from {codex_source}: the source has changed since the import; run scv agents import codex "
            f"--from {codex_source} again") in status.stdout


def test_import_codex_never_copies_a_chatgpt_sign_in(user_home, scv_home, codex_source):
    (codex_source / "auth.json").write_text(json.dumps({"OPENAI_API_KEY": None,
                                                        "tokens": {"refresh_token": "rt-secret-8888"}}))
    proc = run_scv("agents", "import", "codex", "--from", str(codex_source))
    assert proc.returncode == 0, proc.stderr
    assert "ChatGPT sign-in, which is never copied" in proc.stdout
    assert not (scv_home / "agents" / "codex" / "auth.json").exists()
    assert "rt-secret-8888" not in proc.stdout + proc.stderr


def test_import_codex_uses_codex_home_by_default(user_home, scv_home, codex_source):
    proc = run_scv("agents", "import", "codex", env=scv_env(CODEX_HOME=str(codex_source), SCV_HOME=str(scv_home)))
    assert proc.returncode == 0, proc.stderr
    assert (scv_home / "agents" / "codex" / "config.toml").read_text() == CODEX_CONFIG


@pytest.mark.parametrize("broken,sentence,code", [
    ("config", "config.toml is not valid TOML", 1),
    ("auth", "auth.json is not valid JSON", 1),
    ("missing", "has no config.toml to import", 2),
    ("nowhere", "is not a folder", 2),
])
def test_import_codex_validates_both_files_before_writing_either(user_home, scv_home, codex_source, broken, sentence,
                                                                 code):
    source = codex_source
    if broken == "config":
        (source / "config.toml").write_text("model = [unclosed\n")
    elif broken == "auth":
        (source / "auth.json").write_text("{" + CODEX_KEY)
    elif broken == "missing":
        (source / "config.toml").unlink()
    else:
        source = source / "absent"
    proc = run_scv("agents", "import", "codex", "--from", str(source))
    assert proc.returncode == code and sentence in proc.stderr and proc.stderr.count("\n") == 1
    assert CODEX_KEY not in proc.stderr
    assert not (scv_home / "agents" / "codex").exists() or not any((scv_home / "agents" / "codex").iterdir())
    assert not (scv_home / "state" / "imports" / "codex.json").exists()


SCV_PROVIDER = '''[provider]
active = "relay"
[providers.relay]
wire_api = "chat"
model = "relay-model"
base_url = "https://relay.example/v1"
api_key_env = "MY_RELAY_KEY"
'''


def test_import_pi_from_scv_provider_resolves_the_key_now(user_home, tmp_path, scv_home):
    (scv_home / "config.toml").write_text(SCV_PROVIDER)
    env = scv_env(MY_RELAY_KEY=PI_KEY, SCV_HOME=str(scv_home))
    proc = run_scv("agents", "import", "pi", "--from-scv-provider", env=env)
    assert proc.returncode == 0, proc.stderr
    folder = scv_home / "agents" / "pi" / ".pi" / "agent"
    assert json.loads((folder / "models.json").read_text())["providers"]["scv"] == {
        "baseUrl": "https://relay.example/v1", "api": "openai-completions", "models": [{"id": "relay-model"}]}
    assert json.loads((folder / "auth.json").read_text())["scv"]["key"] == PI_KEY
    record = scv_home / "state" / "imports" / "pi.json"
    assert mode(record) == 0o600 and PI_KEY not in record.read_text()
    fake_agent(tmp_path, "pi", "exit 0\n")
    assert status_of("pi", env)["import"]["detail"] == "up to date"
    (scv_home / "config.toml").write_text(SCV_PROVIDER.replace("relay-model", "other-model"))
    status = run_scv("agents", "status", env=env)
    assert ("the source has changed since the import; run scv agents import pi --from-scv-provider again"
            in status.stdout)
    for output in (proc.stdout, proc.stderr, status.stdout):
        assert PI_KEY not in output


def test_import_pi_needs_the_key_variable_set(user_home, scv_home):
    (scv_home / "config.toml").write_text(SCV_PROVIDER)
    proc = run_scv("agents", "import", "pi", "--from-scv-provider")
    assert proc.returncode == 2 and "MY_RELAY_KEY, which is not set here" in proc.stderr
    assert not (scv_home / "agents" / "pi").exists()
    assert run_scv("agents", "import", "pi").returncode == 2
