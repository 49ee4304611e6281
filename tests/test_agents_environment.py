"""The environment a delegated agent gets (scv/core/agents/environment.py): what it inherits, what is
taken away, and the values SCV rewrites for one agent's sake."""

from pathlib import Path

import pytest

from scv.core.agents.descriptors import DESCRIPTORS
from scv.core.agents.environment import build_environment


def environment(agent: str, inherited: dict[str, str]) -> dict[str, str]:
    return build_environment(DESCRIPTORS[agent], {"PATH": "/usr/bin", **inherited}, Path("/nonexistent/scv-home"),
                             parent="scv-1/s-1/x-1", depth=1, full_permissions=False)


@pytest.mark.parametrize("declared, seen", [("yes", "1"), ("True", "1"), ("1", "1"), ("0", None), ("no", None),
                                            ("", None)])
def test_a_containers_is_sandbox_reaches_claude_in_the_one_spelling_it_reads(declared, seen):
    assert environment("claude", {"IS_SANDBOX": declared}).get("IS_SANDBOX") == seen
    assert environment("codex", {"IS_SANDBOX": declared})["IS_SANDBOX"] == declared   # others get it as it is
    assert "IS_SANDBOX" not in environment("claude", {})


def test_credentials_go_and_the_private_home_and_tags_come():
    env = environment("codex", {"OPENAI_API_KEY": "sk-1", "CODEX_HOME": "/mine", "LANG": "C.UTF-8"})
    assert "OPENAI_API_KEY" not in env and env["LANG"] == "C.UTF-8"
    assert env["HOME"] == "/nonexistent/scv-home/agents/codex" and env["CODEX_HOME"] != "/mine"
    assert env["SCV_PARENT"] == "scv-1/s-1/x-1" and env["SCV_DELEGATION_DEPTH"] == "1"
