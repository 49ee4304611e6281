"""`scv agents import|login|logout scv` and its `status`, through real `python -m scv` processes:
the nested SCV's config.toml gets SCV's own active provider with the key resolved at import time,
atomically with mode 0600, keeping the file's other tables; the key never appears in any output."""

import json
import stat
import tomllib

import pytest

from scv.agents.scv_import import render, ActiveProvider
from scv.config.load import ProviderProfile
from tests.conftest import run_scv, scv_env
from tests.fakes import setup_fake_home

KEY = "sk-nested-0123456789abcdef"
PROVIDER = '''[provider]
active = "relay"
[providers.relay]
wire_api = "chat"
model = "relay-model"
base_url = "https://relay.example/v1"
timeout = 90.5
headers = { "X-Team" = "core", "X-Quote" = "a\\"b" }
api_key_env = "MY_RELAY_KEY"
[web]
search = "provider"
'''


@pytest.fixture
def user(tmp_path, monkeypatch):
    return setup_fake_home(tmp_path, monkeypatch)


def nested_config(scv_home):
    return scv_home / "agents" / "scv" / "config.toml"


def status_of(env) -> dict:
    proc = run_scv("agents", "status", "--json", env=env)
    assert proc.returncode == 0, proc.stderr
    return {entry["agent"]: entry for entry in json.loads(proc.stdout)["agents"]}["scv"]


def test_import_scv_copies_the_active_provider_with_its_key_and_keeps_other_tables(user, scv_home):
    (scv_home / "config.toml").write_text(PROVIDER)
    path = nested_config(scv_home)
    path.parent.mkdir(parents=True)
    path.write_text('[provider]\nactive = "old"\n[tools]\ncommand_timeout_seconds = 77\n')
    env = scv_env(MY_RELAY_KEY=KEY, SCV_HOME=str(scv_home))
    proc = run_scv("agents", "import", "scv", env=env)
    assert proc.returncode == 0, proc.stderr
    assert "relay-model" in proc.stdout and "relay.example" in proc.stdout
    written = tomllib.loads(path.read_text())
    assert written["provider"] == {"active": "scv"}
    assert written["providers"]["scv"] == {"kind": "openai", "wire_api": "chat", "model": "relay-model",
                                           "base_url": "https://relay.example/v1", "max_tokens": 8192, "timeout": 90.5,
                                           "headers": {"X-Team": "core", "X-Quote": 'a"b'}, "api_key": KEY}
    assert written["web"] == {"search": "provider"}
    assert written["tools"] == {"command_timeout_seconds": 77}        # kept from the file
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    record = scv_home / "state" / "imports" / "scv.json"
    assert stat.S_IMODE(record.stat().st_mode) == 0o600 and KEY not in record.read_text()
    status = status_of(env)
    assert status["signed_in"] is True
    assert status["summary"] == "signed in (provider openai (chat API); model relay-model; host relay.example)"
    assert status["import"]["detail"] == "up to date"
    (scv_home / "config.toml").write_text(PROVIDER.replace("relay-model", "other-model"))
    changed = status_of(env)
    assert changed["import"]["detail"] == ("the source has changed since the import; run scv agents import scv "
                                           "again")
    text = run_scv("agents", "status", env=env)
    for output in (proc.stdout, proc.stderr, text.stdout, text.stderr, json.dumps(changed)):
        assert KEY not in output


def test_login_scv_is_the_import_and_logout_removes_the_file(user, scv_home):
    (scv_home / "config.toml").write_text(PROVIDER.replace('api_key_env = "MY_RELAY_KEY"', f'api_key = "{KEY}"'))
    proc = run_scv("agents", "login", "scv")
    assert proc.returncode == 0, proc.stderr
    assert tomllib.loads(nested_config(scv_home).read_text())["providers"]["scv"]["api_key"] == KEY
    assert KEY not in proc.stdout + proc.stderr
    out = run_scv("agents", "logout", "scv")
    assert out.returncode == 0 and "removed" in out.stdout
    assert not nested_config(scv_home).exists()
    assert status_of(None)["summary"] == "signed out"
    assert "no provider was stored" in run_scv("agents", "logout", "scv").stdout
    assert run_scv("agents", "login", "scv", "--", "--x").returncode == 2


def test_import_scv_leaves_an_unreadable_file_untouched(user, scv_home):
    (scv_home / "config.toml").write_text(PROVIDER.replace('api_key_env = "MY_RELAY_KEY"', f'api_key = "{KEY}"'))
    path = nested_config(scv_home)
    path.parent.mkdir(parents=True)
    path.write_text("[provider\nbroken")
    proc = run_scv("agents", "import", "scv")
    assert proc.returncode == 1 and "is not valid TOML" in proc.stderr and "left untouched" in proc.stderr
    assert path.read_text() == "[provider\nbroken"
    assert not (scv_home / "state" / "imports" / "scv.json").exists()


def test_import_scv_needs_an_active_provider_and_its_key(user, scv_home):
    proc = run_scv("agents", "import", "scv")
    assert proc.returncode == 2 and "SCV has no active provider to import" in proc.stderr
    (scv_home / "config.toml").write_text(PROVIDER)
    proc = run_scv("agents", "import", "scv")
    assert proc.returncode == 2 and "MY_RELAY_KEY, which is not set here" in proc.stderr
    assert not nested_config(scv_home).exists()


def test_rendered_values_with_quotes_and_control_characters_read_back_exactly():
    profile = ProviderProfile(model='m"\\\x7f', base_url="https://h.example/v1?a=\"1\"",
                              headers={'k"\n': "v\\\t\x01"}, timeout=12.0)
    text = render(ActiveProvider("p", profile, 'k\\"\x00ey', False))
    parsed = tomllib.loads(text)["providers"]["scv"]
    assert parsed["model"] == profile.model and parsed["base_url"] == profile.base_url
    assert parsed["headers"] == profile.headers and parsed["api_key"] == 'k\\"\x00ey'


def test_status_reports_the_nested_scv_as_the_running_scv_when_none_is_installed(user, scv_home):
    """No `scv` on PATH or in ~/.local/bin: the running SCV nests itself, so scv is installed, and
    signed in once its private home holds a provider."""
    out = status_of(None)
    assert out["installed"] is True and out["signed_in"] is False and out["summary"] == "signed out"
    assert "scv    signed out (scv agents login scv)" in run_scv("agents", "status").stdout.splitlines()
    path = nested_config(scv_home)
    path.parent.mkdir(parents=True)
    path.write_text(PROVIDER.replace("relay", "scv").replace('api_key_env = "MY_RELAY_KEY"', f'api_key = "{KEY}"'))
    signed = status_of(None)
    assert signed["installed"] is True and signed["signed_in"] is True and signed["import"] is None
    assert signed["summary"] == "signed in (provider openai (chat API); model scv-model; host scv.example)"
