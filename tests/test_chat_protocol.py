"""A chat channel's session over `scv server --stdio`: the `channel` object of `session.start`
(the tools it brings, its folders, refused logs and ids), the *Chat channel* prompt section, and
the reply's attachments and captions in `turn.completed`."""

import json
from pathlib import Path

import pytest

from scv.core.chat.layout import media_digest
from tests.chat_fakes import PNG
from tests.conftest import scv_env
from tests.fake_openai import FakeOpenAI, Reply
from tests.fakes import write_script

CHAT_TOOLS = {"chat_attach", "chat_history", "chat_keep"}


def channel(scv_home: Path, log: bool = True, conversation: str = "wxid_owner", **more) -> dict:
    wanted = {"kind": "wechat", "account": "default", "conversation": conversation, **more}
    if log:
        wanted["log"] = str(scv_home / "archive" / "wechat" / "default" / conversation)
    return wanted


def test_a_channel_session_offers_the_chat_tools_and_reports_its_folders(clients, workspace, scv_home, tmp_path):
    client = clients("--script", str(write_script(tmp_path / "s.jsonl", {"text": "hi"})))
    started = client.start(cwd=str(workspace), channel=channel(scv_home, keep_days=7))
    assert CHAT_TOOLS <= set(started["tools"])
    home = scv_home.resolve()
    assert started["channel"] == {
        "kind": "wechat", "account": "default", "conversation": "wxid_owner",
        "media": str(home / "state" / "media" / "wechat" / "default" / media_digest("wxid_owner")),
        "outbox": str(home / "state" / "media" / "outbox"),
        "log": str(home / "archive" / "wechat" / "default" / "wxid_owner"),
        "kept": str(home / "archive" / "wechat" / "default" / "wxid_owner" / "files"), "keep_days": 7}


def test_which_tools_a_session_gets(clients, workspace, scv_home, tmp_path):
    script = str(write_script(tmp_path / "s.jsonl", {"text": "hi"}))
    no_log = clients("--script", script).start(cwd=str(workspace), channel=channel(scv_home, log=False))
    assert CHAT_TOOLS & set(no_log["tools"]) == {"chat_attach"} and no_log["channel"]["log"] is None
    plain = clients("--script", script).start(cwd=str(workspace))
    assert not CHAT_TOOLS & set(plain["tools"]) and "channel" not in plain


@pytest.mark.parametrize("wanted, code, sentence", [
    ({"log": "/tmp"}, -32000, "is not this conversation's folder in the chat archive"),
    ({"log": "relative/path"}, -32000, "is not an absolute path"),
    ({"conversation": "../../etc"}, -32602, "channel.conversation"),
    ({"account": ".hidden"}, -32602, "channel.account"),
    ({"kind": "telegram"}, -32602, "channel.kind"),
    ({"keep_days": 0}, -32602, "channel.keep_days"),
])
def test_bad_channels_are_refused(clients, workspace, scv_home, tmp_path, wanted, code, sentence):
    client = clients("--script", str(write_script(tmp_path / "s.jsonl", {"text": "hi"})))
    client.request("initialize", {"protocol_version": 3})
    reply = client.response(client.send("session.start", {"cwd": str(workspace),
                                                          "channel": {**channel(scv_home), **wanted}}))
    assert reply.error is not None and reply.error.code == code and sentence in reply.error.message, reply.error


def test_a_log_through_a_link_to_the_right_folder_is_taken(clients, workspace, scv_home, tmp_path):
    folder = scv_home / "archive" / "wechat" / "default" / "wxid_owner"
    folder.mkdir(parents=True)
    (tmp_path / "alias").symlink_to(folder)
    client = clients("--script", str(write_script(tmp_path / "s.jsonl", {"text": "hi"})))
    started = client.start(cwd=str(workspace), channel={**channel(scv_home), "log": str(tmp_path / "alias")})
    assert started["channel"]["log"] == str(folder.resolve())


def test_prompt_section_attachments_and_captions(clients, workspace, scv_home, user_home_env):
    fake = FakeOpenAI()
    try:
        (scv_home / "config.toml").write_text(fake.config("chat"))
        (workspace / "chart.png").write_bytes(PNG)
        (workspace / "notes.txt").write_text("notes")
        fake.enqueue(Reply(calls=[("c1", "chat_attach", json.dumps({"path": "chart.png", "caption": "Sales"})),
                                  ("c2", "chat_attach", json.dumps({"path": "notes.txt"})),
                                  ("c3", "chat_attach", json.dumps({"path": str(scv_home / "config.toml")}))]),
                     Reply(text="Here they are."), Reply(text="Nothing this time."))
        client = clients(env=user_home_env)
        client.start(cwd=str(workspace), auto_approve=True, channel=channel(scv_home, keep_days=3))
        client.request("turn.start", {"prompt": "send the chart"})
        done = client.until("turn.completed").params
        assert done["reply"] == "Here they are.\n\nchart.png: Sales"
        assert [(a["name"], a["kind"], a.get("caption")) for a in done["attachments"]] == [
            ("chart.png", "image", "Sales"), ("notes.txt", "file", None)]
        assert all(Path(a["copy"]).exists() and Path(a["delivery"]).exists() for a in done["attachments"])
        refused = [p for p in client.notifications("tool.completed") if p["call_id"] == "c3"][0]
        assert refused["ok"] is False and "inside SCV's own folder" in refused["result"]["error"]
        prompt = fake.requests[0].body["messages"][0]["content"]
        section = prompt.split("## Chat channel")[1]
        assert "direct WeChat chat" in section and "deleted after 3 days" in section and "`chat_history`" in section
        assert str(scv_home.resolve() / "state" / "media" / "wechat" / "default") in section
        # The next reply starts with no attachments.
        client.request("turn.start", {"prompt": "anything else?"})
        later = client.until("turn.completed", reply="Nothing this time.").params
        assert later["attachments"] == [] and later["reply"] == "Nothing this time."
    finally:
        fake.close()


@pytest.fixture
def user_home_env(tmp_path):
    home = tmp_path / "user"
    home.mkdir()
    return scv_env(FAKE_OPENAI_KEY="sk-test", HOME=str(home))
