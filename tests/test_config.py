"""Configuration files: typed decoding, errors naming file and key, project restrictions."""

import pytest

from scv.config.load import load_config
from scv.core.errors import ConfigError


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_defaults_without_files(workspace, scv_home):
    config = load_config(workspace)
    assert config.tools.approval_policy == "on-risk"
    assert config.tools.command_timeout_seconds == 600
    assert config.tools.max_timeout_seconds == 14400


def test_user_then_project(workspace, scv_home):
    write(scv_home / "config.toml", "[tools]\ncommand_timeout_seconds = 100\noutput_limit_bytes = 2048\n")
    write(workspace / ".scv/config.toml", "[tools]\noutput_limit_bytes = 4096\napproval_policy = \"never\"\n")
    config = load_config(workspace)
    assert config.tools.command_timeout_seconds == 100
    assert config.tools.output_limit_bytes == 4096
    assert config.tools.approval_policy == "never"


@pytest.mark.parametrize("text, expected", [
    ("[tools]\nbogus = 1\n", "unknown key tools.bogus"),
    ("[nonsense]\n", "unknown key nonsense"),
    ("[tools]\ncommand_timeout_seconds = \"soon\"\n", "key tools.command_timeout_seconds"),
    ("[tools]\napproval_policy = \"sometimes\"\n", "key tools.approval_policy"),
    ("[tools]\ncommand_timeout_seconds = 0\n", "key tools.command_timeout_seconds"),
    ("[tools\n", "not valid TOML"),
])
def test_user_file_errors_name_the_file_and_key(workspace, scv_home, text, expected):
    write(scv_home / "config.toml", text)
    with pytest.raises(ConfigError) as err:
        load_config(workspace)
    assert expected in str(err.value)
    assert str(scv_home / "config.toml") in str(err.value)


@pytest.mark.parametrize("text, expected", [
    ("[tools]\napproval_policy = \"on-risk\"\n", "only tighten tools.approval_policy"),
    ("[tools]\nmax_timeout_seconds = 99999\n", "tools.max_timeout_seconds may not be set by a project config"),
    ("[tools]\nworker_memory_mb = 99999\n", "tools.worker_memory_mb may not be set by a project config"),
])
def test_a_project_file_cannot_loosen_or_choose(workspace, text, expected):
    write(workspace / ".scv/config.toml", text)
    with pytest.raises(ConfigError, match=expected) as err:
        load_config(workspace)
    assert ".scv/config.toml" in str(err.value)


def test_timeout_above_the_ceiling_is_a_config_error(workspace, scv_home):
    write(scv_home / "config.toml", "[tools]\ncommand_timeout_seconds = 500\nmax_timeout_seconds = 400\n")
    with pytest.raises(ConfigError, match="over tools.max_timeout_seconds"):
        load_config(workspace)
