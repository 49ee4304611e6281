"""The nested SCV (`scv` agent) end to end: a real parent `scv server --stdio` whose model (the
fake OpenAI provider) calls `agent` with agent scv, and the nested SCV is the running SCV itself
(`python -m scv server --stdio`: no `scv` is installed), in `$SCV_HOME/agents/scv` with a fake
provider of its own. Its approval requests reach the parent's client, its depth is the parent's
plus one, and the parent follows its background jobs between calls."""

import json
from pathlib import Path

import pytest

from tests.conftest import run_scv, scv_env
from tests.delegation_fakes import codex_reply_lines
from tests.agent_fakes import install
from tests.fake_openai import FakeOpenAI, Reply
from tests.fakes import setup_fake_home, wait_for

pytestmark = pytest.mark.time_limit(300)


def agent_call(call_id: str, **args) -> Reply:
    return Reply(calls=[(call_id, "agent", json.dumps(args))])


def bash_call(call_id: str, command: str) -> Reply:
    return Reply(calls=[(call_id, "bash", json.dumps({"command": command}))])


class Nested:
    """A parent session's fake provider, the nested SCV's own, and the parent's client."""

    def __init__(self, clients, tmp_path: Path, monkeypatch, scv_home: Path, workspace: Path, parent_config: str = "",
                 nested_config: str = "", **env: str):
        setup_fake_home(tmp_path, monkeypatch)       # no `scv` on PATH or in ~/.local/bin
        self.parent, self.nested = FakeOpenAI(), FakeOpenAI()
        self.scv_home, self.workspace = scv_home, workspace
        (scv_home / "config.toml").write_text(self.parent.config("chat") + parent_config)
        self.private = scv_home / "agents" / "scv"
        self.private.mkdir(parents=True)
        # What `scv agents import scv` writes (tests/test_agents_scv_import.py): the key itself.
        (self.private / "config.toml").write_text(
            self.nested.config("chat").replace('api_key_env = "FAKE_OPENAI_KEY"', 'api_key = "sk-test"')
            + nested_config)
        self.client = clients(env=scv_env(FAKE_OPENAI_KEY="sk-test", **env))
        self.session = self.client.start(cwd=str(workspace))

    def close(self) -> None:
        self.parent.close()
        self.nested.close()

    def approve(self, approved: bool, **match) -> dict:
        asked = self.client.until("approval.requested", timeout=60, **match).params
        self.client.request("approval.resolve", {"id": asked["id"], "approved": approved})
        return asked

    def completed(self, tool: str = "agent") -> dict:
        return self.client.until("tool.completed", timeout=120, tool=tool).params

    def turn_done(self) -> dict:
        return self.client.until("turn.completed", timeout=120).params

    def ps(self) -> list[dict]:
        proc = run_scv("agents", "ps", "--json", env=scv_env(SCV_HOME=str(self.scv_home)))
        assert proc.returncode == 0, proc.stderr
        return [row for row in json.loads(proc.stdout)["delegations"] if row["agent"] == "scv"]

    def tool_names(self, request_index: int) -> list[str]:
        return [t["function"]["name"] for t in self.nested.requests[request_index].body.get("tools", [])]


@pytest.fixture
def nested(clients, tmp_path, monkeypatch, scv_home, workspace, request):
    made = Nested(clients, tmp_path, monkeypatch, scv_home, workspace, **getattr(request, "param", {}))
    yield made
    made.close()


def test_two_turns_on_one_nested_scv_with_its_approvals_relayed(nested, workspace):
    nested.parent.enqueue(agent_call("a1", agent="scv", prompt="make the file"), Reply(text="parent saw turn 1"),
                          agent_call("a2", session="scv-1", prompt="and another"), Reply(text="parent saw turn 2"))
    nested.nested.enqueue(bash_call("c1", "echo nested > made-by-nested.txt"), Reply(text="the file is made"),
                          bash_call("c2", "echo no > refused.txt"), Reply(text="that was denied"))
    client = nested.client
    client.request("turn.start", {"prompt": "delegate it"})
    outer = nested.approve(True, tool="agent")
    assert "as a nested SCV session" in outer["summary"]
    inner = nested.approve(True, tool="bash")
    assert inner["risk"] == "process" and inner["summary"].startswith("[scv-1 depth 1] ")
    assert "echo nested > made-by-nested.txt" in inner["summary"]
    assert inner["workspace"] == str(workspace) == outer["workspace"]
    first = nested.completed()
    assert first["ok"] is True
    assert first["result"] == {"agent": "scv", "status": "completed", "reply": "the file is made",
                               "usage": {"input_tokens": 20, "output_tokens": 10}, "session": "scv-1", "turn": 1}
    assert (workspace / "made-by-nested.txt").read_text() == "nested\n"
    assert nested.turn_done()["reply"] == "parent saw turn 1"
    # Between calls the nested SCV waits, idle, on the same process.
    [row] = nested.ps()
    assert row["state"] == "idle" and row["conversation"] == "scv-1" and row["depth"] == 1
    progress = [p["line"] for p in client.notifications("tool.progress")]
    assert progress[0] == "bash echo nested > made-by-nested.txt" and progress[-1] == "the file is made"

    client.request("turn.start", {"prompt": "once more"})
    nested.approve(True, tool="agent")
    denied = nested.approve(False, tool="bash")
    assert denied["summary"].startswith("[scv-1 depth 1] ")
    second = nested.completed()
    assert second["result"]["reply"] == "that was denied"
    assert {k: second["result"][k] for k in ("agent", "status", "session", "turn")} == {
        "agent": "scv", "status": "completed", "session": "scv-1", "turn": 2}
    assert set(second["result"]) == {"agent", "status", "reply", "usage", "session", "turn"}
    assert not (workspace / "refused.txt").exists()
    denial = [m for m in nested.nested.requests[3].body["messages"] if m["role"] == "tool"][-1]
    assert "denied" in denial["content"]
    [again] = nested.ps()
    assert again["pid"] == row["pid"] and again["turn"] == 2        # the same nested process
    assert nested.turn_done()["reply"] == "parent saw turn 2"
    assert len(nested.nested.requests) == 4 and nested.nested.requests[0].headers["Authorization"] == "Bearer sk-test"


def test_effort_and_a_later_model_are_refused_before_anyone_is_asked(nested):
    nested.parent.enqueue(agent_call("a1", agent="scv", prompt="x", effort="high"), Reply(text="no effort"),
                          agent_call("a2", agent="scv", prompt="hello", model="fake-model"), Reply(text="started"),
                          agent_call("a3", session="scv-1", prompt="switch", model="other-model"),
                          Reply(text="refused"))
    nested.nested.enqueue(Reply(text="hello back"))
    client = nested.client
    client.request("turn.start", {"prompt": "try effort"})
    refused = nested.completed()
    assert refused["ok"] is False and "scv does not take effort" in refused["result"]["error"]
    assert nested.turn_done()["reply"] == "no effort"
    assert not client.notifications("approval.requested") and nested.ps() == []     # nothing was launched
    client.request("turn.start", {"prompt": "start one with a model"})
    nested.approve(True, tool="agent")
    assert nested.completed()["result"]["reply"] == "hello back"
    assert nested.nested.requests[0].body["model"] == "fake-model"
    assert nested.turn_done()["reply"] == "started"
    client.request("turn.start", {"prompt": "change its model"})
    later = nested.completed()
    assert later["ok"] is False and "scv takes model only when its conversation starts" in later["result"]["error"]
    assert len(client.notifications("approval.requested")) == 1        # only the start was asked about
    assert nested.turn_done()["reply"] == "refused"
    assert len(nested.nested.requests) == 1


def nested_codex(nested: Nested, body: str) -> None:
    """A fake codex in the nested SCV's own user home (its ~/.local/bin), so it offers `agent`."""
    fake = install(nested.private / ".local" / "bin", "codex", nested.private.parent.parent.parent / "log" / "codex")
    fake.write(body)


def ask_what_it_offers(nested: Nested) -> dict:
    nested_codex(nested, "exit 0\n")
    nested.parent.enqueue(agent_call("a1", agent="scv", prompt="what can you use?"), Reply(text="ok"))
    nested.nested.enqueue(Reply(text="these"))
    nested.client.request("turn.start", {"prompt": "ask it"})
    nested.approve(True, tool="agent")
    done = nested.completed()
    assert done["ok"] is True, done
    return done


def test_the_nested_session_is_one_level_deeper_and_may_delegate_once_more(nested):
    ask_what_it_offers(nested)
    # depth 1 against its default limit of 2: the nested SCV may delegate once more.
    assert "agent" in nested.tool_names(0) and nested.ps()[0]["depth"] == 1


@pytest.mark.parametrize("nested", [{"nested_config": "[agent]\nmax_delegation_depth = 1\n"}], indirect=True)
def test_the_nested_sides_own_limit_applies_at_its_depth(nested):
    ask_what_it_offers(nested)
    assert "agent" not in nested.tool_names(0) and "bash" in nested.tool_names(0)


@pytest.mark.parametrize("nested", [{"SCV_DELEGATION_DEPTH": "1"}], indirect=True)
def test_a_parent_one_level_down_starts_its_nested_scv_at_the_limit(nested):
    """The parent is itself a delegated run (depth 1, inherited): it may still delegate, and the
    nested SCV it starts declares depth 2, where the default limit gives it no agent tool."""
    assert "agent" in nested.session["tools"]
    nested_codex(nested, "exit 0\n")
    nested.parent.enqueue(agent_call("a1", agent="scv", prompt="run pwd"), Reply(text="ok"))
    nested.nested.enqueue(bash_call("c1", "pwd"), Reply(text="ran"))
    nested.client.request("turn.start", {"prompt": "ask it"})
    nested.approve(True, tool="agent")
    inner = nested.approve(False, tool="bash")
    assert inner["summary"].startswith("[scv-1 depth 2] ")
    nested.completed()
    assert "agent" not in nested.tool_names(0) and nested.ps()[0]["depth"] == 2


def test_the_parent_follows_the_nested_scvs_own_background_job(nested, tmp_path, workspace):
    """The nested SCV starts a background job of its own: `scv agents ps` shows it `background`
    while the job counts, the report turn it starts by itself has its approval request denied
    (no call carries it to a person), and once its model has seen the result it is `idle`."""
    gate = tmp_path / "finish-the-job"
    nested_codex(nested, f"while [ ! -e {gate} ]; do sleep 0.05; done\n" + codex_reply_lines("the job's findings"))
    nested.parent.enqueue(agent_call("a1", agent="scv", prompt="start a job"), Reply(text="it runs"))
    nested.nested.enqueue(agent_call("n1", agent="codex", prompt="dig", background=True), Reply(text="job started"),
                          bash_call("r1", "echo reported > from-the-report.txt"), Reply(text="reported"))
    client = nested.client
    client.request("turn.start", {"prompt": "delegate it"})
    outer = nested.approve(True, tool="agent")
    assert not outer["summary"].startswith("[scv-1")
    inner = nested.approve(True, tool="agent")
    assert inner["summary"].startswith("[scv-1 depth 1] ") and inner["risk"] == "delegate"
    done = nested.completed()
    assert done["result"]["reply"] == "job started" and "jobs" not in done      # the parent's own call started none
    assert nested.turn_done()["reply"] == "it runs"
    [row] = nested.ps()
    assert row["state"] == "background" and row["background_jobs"] == 1
    gate.touch()
    # The job ends, the nested SCV reports it in a turn of its own (its bash request denied), and
    # the parent stops counting once that turn has ended.
    wait_for(lambda: nested.ps()[0]["state"] == "idle", timeout=60, what="the nested SCV to be idle")
    assert len(nested.nested.requests) == 4
    report = nested.nested.requests[2].body["messages"]
    assert any("the job's findings" in str(m.get("content")) for m in report)
    denial = [m for m in nested.nested.requests[3].body["messages"] if m["role"] == "tool"][-1]
    assert "denied" in denial["content"]
    assert not (workspace / "from-the-report.txt").exists()
    assert [a["tool"] for a in client.notifications("approval.requested")] == ["agent", "agent"]
    assert "background_jobs" not in nested.ps()[0]
