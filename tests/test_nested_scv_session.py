"""The nested SCV (`scv` agent) end to end: a real parent `scv server --stdio` whose model (the
fake OpenAI provider) calls `agent` with agent scv, and the nested SCV is the running SCV itself
(`python -m scv server --stdio`: no `scv` is installed), in `$SCV_HOME/agents/scv` with a fake
provider of its own. Its approval requests reach the parent's client, its depth is the parent's
plus one, and the parent follows its background jobs between calls. A cancelled or timed-out call
cancels the nested turn and keeps the conversation; `scv agents ps` and `kill` track it; a nested
SCV that dies mid-turn ends its conversation; orphan reconcile reaps one whose parent was killed."""

import json
import os
import signal
from pathlib import Path

import pytest

from tests.conftest import run_scv, scv_env
from tests.delegation_fakes import codex_reply_lines, gone, kill_scv_tree, records_in, tagged_with
from tests.agent_fakes import install
from tests.fake_openai import FakeOpenAI, Reply, Stall
from tests.fakes import setup_fake_home, wait_for, write_script
from tests.live_fakes import completed_calls

pytestmark = pytest.mark.time_limit(300)


def agent_call(call_id: str, **args) -> Reply:
    return Reply(calls=[(call_id, "agent", json.dumps(args))])


def bash_call(call_id: str, command: str) -> Reply:
    return Reply(calls=[(call_id, "bash", json.dumps({"command": command}))])


class Nested:
    """A parent session's fake provider, the nested SCV's own, and the parent's client."""

    def __init__(self, clients, tmp_path: Path, monkeypatch, scv_home: Path, workspace: Path, parent_config: str = "",
                 nested_config: str = "", start: dict | None = None, **env: str):
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
        self.session = self.client.start(cwd=str(workspace), **(start or {}))

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

    def held(self, requests: int) -> dict:
        """The nested SCV's provider holds request number `requests` (a Stall queued there): the
        nested turn runs. Its `scv agents ps` row."""
        wait_for(lambda: len(self.nested.requests) >= requests, timeout=60, what="the nested turn to reach its provider")
        [row] = self.ps()
        return row

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
    # Two model responses of the nested SCV: the bash call, then the reply.
    assert first["result"] == {"agent": "scv", "status": "completed", "reply": "the file is made",
                               "usage": {"turns": 2, "input_tokens": 20, "cached_input_tokens": 0,
                                         "output_tokens": 10, "cost_usd": None, "cost_source": None},
                               "session": "scv-1", "turn": 1}
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


# --- cancel, timeout, kill, a nested SCV that dies, orphans -------------------------------------

AUTO = {"start": {"auto_approve": True}}
HOLD = Stall(120)        # the nested provider holds its reply: only turn.cancel (or a kill) ends that turn


@pytest.mark.parametrize("nested", [AUTO], indirect=True)
def test_a_cancelled_call_cancels_the_nested_turn_and_keeps_the_conversation(nested):
    nested.parent.enqueue(agent_call("a1", agent="scv", prompt="take your time"),
                          agent_call("a2", session="scv-1", prompt="now quickly"), Reply(text="parent saw turn 2"))
    nested.nested.enqueue(HOLD, Reply(text="quick this time"))
    client = nested.client
    client.request("turn.start", {"prompt": "delegate it"})
    row = nested.held(1)
    assert row["state"] == "running" and row["turn"] == 1
    assert client.request("turn.cancel") == {"cancelled": True}
    assert client.until("turn.failed", timeout=60).params["reason"] == "cancelled"
    first = completed_calls(client)["a1"]
    # The nested turn ended on turn.cancel (its provider still holds the reply) within the settle time.
    assert first["status"] == "cancelled" and "the conversation can continue" in first["error"]
    assert (first["session"], first["turn"]) == ("scv-1", 1)
    wait_for(lambda: [r["state"] for r in nested.ps()] == ["idle"], what="the nested SCV to be idle again")
    client.request("turn.start", {"prompt": "again"})
    assert nested.turn_done()["reply"] == "parent saw turn 2"
    second = completed_calls(client)["a2"]
    assert (second["status"], second["reply"], second["turn"]) == ("completed", "quick this time", 2)
    [again] = nested.ps()
    assert again["pid"] == row["pid"] and again["turn"] == 2
    assert len(nested.nested.requests) == 2


@pytest.mark.parametrize("nested", [AUTO], indirect=True)
def test_a_timed_out_call_whose_nested_turn_settles_stays_resumable(nested):
    nested.parent.enqueue(agent_call("a1", agent="scv", prompt="one"),
                          agent_call("a2", session="scv-1", prompt="two", timeout_seconds=5),
                          agent_call("a3", session="scv-1", prompt="three"), Reply(text="all three"))
    nested.nested.enqueue(Reply(text="one done"), HOLD, Reply(text="three done"))
    nested.client.request("turn.start", {"prompt": "go"})
    assert nested.turn_done()["reply"] == "all three"
    calls = completed_calls(nested.client)
    assert calls["a1"]["reply"] == "one done"
    timed_out = calls["a2"]
    assert (timed_out["status"], timed_out["session"], timed_out["turn"]) == ("timeout", "scv-1", 2)
    assert "ran past the timeout and its turn was cancelled; the conversation can continue" in timed_out["error"]
    assert (calls["a3"]["status"], calls["a3"]["reply"], calls["a3"]["turn"]) == ("completed", "three done", 3)
    [row] = nested.ps()
    assert row["turn"] == 3 and len(nested.nested.requests) == 3


@pytest.mark.parametrize("nested", [AUTO], indirect=True)
def test_agents_ps_tracks_the_nested_scv_and_kill_between_turns_ends_its_conversation(nested):
    nested.parent.enqueue(agent_call("a1", agent="scv", prompt="one"), Reply(text="t1"),
                          agent_call("a2", session="scv-1", prompt="two"),
                          agent_call("a3", session="scv-1", prompt="three"), agent_call("a4", agent="scv", prompt="new"),
                          Reply(text="t3"))
    nested.nested.enqueue(Reply(text="one done"), HOLD, Reply(text="fresh start"))
    client = nested.client
    client.request("turn.start", {"prompt": "first"})
    nested.turn_done()
    [row] = nested.ps()
    assert (row["state"], row["turn"], row["conversation"]) == ("idle", 1, "scv-1")
    client.request("turn.start", {"prompt": "second"})
    running = nested.held(2)
    assert (running["state"], running["turn"], running["pid"]) == ("running", 2, row["pid"])
    client.request("turn.cancel")
    client.until("turn.failed", timeout=60)
    wait_for(lambda: [r["state"] for r in nested.ps()] == ["idle"], what="the nested SCV to be idle again")
    family = {p.pid for p in tagged_with(row["handle"])}
    assert row["pid"] in family and len(family) >= 2, "the nested server and the SCV processes it started"
    killed = run_scv("agents", "kill", row["handle"], "--json", env=scv_env(SCV_HOME=str(nested.scv_home)))
    assert killed.returncode == 0, killed.stderr
    wait_for(lambda: gone(sorted(family)) and not tagged_with(row["handle"]) and not nested.ps(),
             what="the killed nested SCV and all its processes to be collected")
    assert records_in(nested.scv_home) == []
    client.request("turn.start", {"prompt": "third"})
    assert nested.turn_done()["reply"] == "t3"
    calls = completed_calls(client)
    assert calls["a3"]["status"] == "failed"
    assert "conversation scv-1 cannot continue: its server exited" in calls["a3"]["error"]
    fresh = calls["a4"]
    assert (fresh["status"], fresh["reply"], fresh["session"], fresh["turn"]) == ("completed", "fresh start", "scv-2", 1)
    [new] = nested.ps()
    assert new["conversation"] == "scv-2" and new["pid"] not in family


@pytest.mark.parametrize("nested", [AUTO], indirect=True)
def test_agents_kill_during_a_nested_turn_cancels_the_call_and_ends_the_conversation(nested):
    nested.parent.enqueue(agent_call("a1", agent="scv", prompt="take your time"),
                          agent_call("a2", session="scv-1", prompt="still there?"), Reply(text="t1"))
    nested.nested.enqueue(HOLD)
    client = nested.client
    client.request("turn.start", {"prompt": "delegate it"})
    row = nested.held(1)
    family = {p.pid for p in tagged_with(row["handle"])}
    assert run_scv("agents", "kill", row["handle"], env=scv_env(SCV_HOME=str(nested.scv_home))).returncode == 0
    assert nested.turn_done()["reply"] == "t1"
    calls = completed_calls(client)
    assert calls["a1"]["status"] == "cancelled" and "was stopped by scv agents kill" in calls["a1"]["error"]
    assert "session" not in calls["a1"]
    assert "is not a conversation of this session" in calls["a2"]["error"]
    wait_for(lambda: gone(sorted(family)) and not tagged_with(row["handle"]), what="the killed nested SCV to go")
    assert nested.ps() == [] and records_in(nested.scv_home) == []


BROKEN_SKILL = "---\nname: [not, a, name]\n---\n"


@pytest.mark.parametrize("nested", [AUTO], indirect=True)
def test_a_nested_scv_killed_mid_turn_fails_the_call_with_its_stderr_and_ends_the_conversation(nested):
    # A broken skill of its own costs the nested SCV one stderr line as its session starts.
    (nested.private / "skills" / "broken").mkdir(parents=True)
    (nested.private / "skills" / "broken" / "SKILL.md").write_text(BROKEN_SKILL)
    nested.parent.enqueue(agent_call("a1", agent="scv", prompt="one"), Reply(text="t1"),
                          agent_call("a2", session="scv-1", prompt="two"),
                          agent_call("a3", session="scv-1", prompt="three"), Reply(text="t2"))
    nested.nested.enqueue(Reply(text="one done"), HOLD)
    client = nested.client
    client.request("turn.start", {"prompt": "first"})
    nested.turn_done()
    client.request("turn.start", {"prompt": "second"})
    row = nested.held(2)
    family = {p.pid for p in tagged_with(row["handle"])}
    os.kill(row["pid"], signal.SIGKILL)
    assert nested.turn_done()["reply"] == "t2"
    calls = completed_calls(client)
    died = calls["a2"]
    assert died["status"] == "failed" and "the nested scv was killed by SIGKILL" in died["error"]
    assert "broken" in died["stderr_tail"] and "its stderr ends:" in died["error"]
    assert "session" not in died and not any(key.startswith("_") for key in died)
    assert "is not a conversation of this session" in calls["a3"]["error"]
    wait_for(lambda: gone(sorted(family)) and not tagged_with(row["handle"]), what="the nested SCV's processes to go")
    assert nested.ps() == [] and records_in(nested.scv_home) == []


@pytest.mark.parametrize("nested", [AUTO], indirect=True)
def test_orphan_reconcile_reaps_an_idle_nested_scv_whose_parent_was_killed(nested, tmp_path, workspace):
    nested.parent.enqueue(agent_call("a1", agent="scv", prompt="one"), Reply(text="t1"))
    nested.nested.enqueue(Reply(text="one done"))
    nested.client.request("turn.start", {"prompt": "first"})
    nested.turn_done()
    [row] = nested.ps()
    [record] = records_in(nested.scv_home)
    assert record["owner_pid"] == nested.client.proc.pid and record["pid"] == row["pid"]
    family = {p.pid for p in tagged_with(row["handle"])}
    assert row["pid"] in family
    kill_scv_tree(nested.client.proc.pid, row["handle"])     # every parent SCV process at once, as a crash would
    nested.client.proc.wait(10)
    env = scv_env(SCV_HOME=str(nested.scv_home))
    listed = json.loads(run_scv("agents", "ps", "--all", "--json", env=env).stdout)["delegations"]
    assert [(r["handle"], r["state"]) for r in listed] == [(row["handle"], "orphan")]
    trivial = write_script(tmp_path / "t.jsonl", {"text": "hello"})
    done = run_scv("exec", "--script", str(trivial), "-C", str(workspace), env=env)
    assert done.returncode == 0, done.stderr
    assert f"stopped 1 orphaned delegation(s): {row['handle']}" in done.stderr
    wait_for(lambda: gone(sorted(family)) and not tagged_with(row["handle"]), what="the orphaned nested SCV to go")
    assert records_in(nested.scv_home) == []


def test_a_schema_call_is_repaired_on_the_nested_scvs_next_turn(nested):
    schema = {"type": "object", "properties": {"verdict": {"enum": ["pass", "fail"]}}, "required": ["verdict"]}
    nested.parent.enqueue(agent_call("a1", agent="scv", prompt="check it", schema=schema), Reply(text="parent done"))
    nested.nested.enqueue(Reply(text="It all passed."), Reply(text='```json\n{"verdict": "pass"}\n```'))
    nested.client.request("turn.start", {"prompt": "delegate a check"})
    nested.approve(True, tool="agent")
    result = nested.completed()["result"]
    assert result["status"] == "completed" and result["structured"] == {"verdict": "pass"}, result
    assert result["session"] == "scv-1" and result["turn"] == 2
    first, repair = (json.dumps(r.body["messages"]) for r in nested.nested.requests)
    assert "Structured result" in first and "did not give a JSON document" in repair
    assert "It all passed." in repair                   # the repair went on the same conversation
    assert nested.turn_done()["reply"] == "parent done"
