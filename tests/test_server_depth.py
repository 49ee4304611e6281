"""`scv server --stdio` started inside a delegated agent takes its depth from the inherited
`SCV_DELEGATION_DEPTH` when that is deeper than what `session.start` declares, so a delegated
agent cannot get the `agent` tool back past `agent.max_delegation_depth`."""

import pytest

from tests.conftest import scv_env
from tests.delegation_fakes import fake_agent
from tests.fakes import setup_fake_home, write_script
from tests.stdio_client import StdioClient


@pytest.mark.parametrize("inherited,declared,offered", [
    (None, 0, True),        # a top-level client: the agent tool is there
    ("2", 0, False),        # inside a delegated agent at the limit: declaring 0 does not lift it
    ("1", 0, True),         # one level down: one more delegation is allowed (the default limit is 2)
    ("0", 2, False),        # a deeper declaration still counts
    ("junk", 0, False),     # an unreadable depth counts as the deepest
])
def test_inherited_depth_wins_when_deeper(tmp_path, monkeypatch, workspace, scv_home, inherited, declared, offered):
    setup_fake_home(tmp_path, monkeypatch)
    fake_agent(tmp_path, "codex", "exit 0\n")
    script = write_script(tmp_path / "s.jsonl", {"text": "hi"})
    env = scv_env(SCV_HOME=str(scv_home))
    env.pop("SCV_DELEGATION_DEPTH", None)
    if inherited is not None:
        env["SCV_DELEGATION_DEPTH"] = inherited
    client = StdioClient("--script", str(script), env=env)
    try:
        session = client.start(cwd=str(workspace), delegation_depth=declared)
        assert ("agent" in session["tools"]) is offered
    finally:
        client.kill()
