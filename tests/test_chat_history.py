"""`chat_history` through real workers: search over text, quotes, file names and transcripts
(newest first, any case, the byte cap), episodes with their dates, reading an episode with file
states, refused arguments and episode IDs, and results kept within the output limit."""

import os
from pathlib import Path

import msgspec
import pytest

from scv.config.load import Config, ToolsConfig
from scv.core.chat.archive import FileEntry, Message, Voice, append_message, mark_new, record_kept
from scv.core.errors import RefusedError
from scv.tools.base import Risk
from tests.chat_fakes import ctx, runner  # noqa: F401 (fixtures)
from tests.chat_fakes import at, call, channel_ctx, runner_for, sent_file


def say(ctx, when, text="", author="owner", **more):
    return append_message(ctx.channel.log, Message(time=when, author=author, text=text, **more), sync=False)


def history(runner, **args) -> dict:
    result = call(runner, "chat_history", **args)
    assert result.ok, result.value
    return result.value


def test_search_finds_every_word_anywhere_newest_first(runner, ctx):
    say(ctx, at(2026, 9, 1, 9, 0, 0), "The BLUE door is open")
    say(ctx, at(2026, 9, 1, 9, 1, 0), "ok", author="scv", quote="which blue door?")
    say(ctx, at(2026, 9, 2, 9, 0, 0), "", files=[FileEntry(name="blue-door.jpg", state="not_saved")])
    say(ctx, at(2026, 9, 3, 9, 0, 0), "", voice=Voice(transcript="paint the door blue"))
    say(ctx, at(2026, 9, 4, 9, 0, 0), "a red door")
    say(ctx, at(2026, 9, 5, 9, 0, 0), "Straße and a \"quoted\" word")
    prepared = runner.prepare("chat_history", {"action": "search", "query": "blue door"})
    assert prepared.risk is Risk.READ_ONLY
    value = history(runner, action="search", query="Door blue")
    assert [(h["in"], h["author"]) for h in value["results"]] == [("voice", "owner"), ("file", "owner"),
                                                                   ("quote", "scv"), ("text", "owner")]
    assert value["more"] is False and value["results"][-1]["excerpt"] == "The BLUE door is open"
    assert value["results"][0]["episode"] == "2026/2026-08-31_2026-09-06/2026-09-03T09-00-00"
    assert value["results"][-1]["time"] == "2026-09-01T09:00:00+08:00" and value["results"][-1]["index"] == 0
    assert [h["excerpt"] for h in history(runner, action="search", query="STRASSE")["results"]] == [
        'Straße and a "quoted" word']
    assert len(history(runner, action="search", query='"quoted"')["results"]) == 1
    limited = history(runner, action="search", query="door", limit=2)
    assert len(limited["results"]) == 2 and limited["more"] is True
    assert history(runner, action="search", query="purple")["results"] == []


def test_search_reads_at_most_its_byte_cap(runner, ctx, monkeypatch):
    import scv.tools.chat_history as spec
    for day in range(1, 21):
        for n in range(50):
            say(ctx, at(2026, 6, day, 8, 0, n), f"needle {day} " + "x" * 200)
    everything = history(runner, action="search", query="needle", limit=100)
    assert everything["results"][0]["excerpt"].startswith("needle 20 ")
    monkeypatch.setattr(spec, "SEARCH_BYTES", 64 * 1024)
    capped = history(runner, action="search", query="needle", limit=100)
    assert capped["more"] is True and 0 < len(capped["results"]) < 50 * 5
    assert {h["excerpt"].split()[1] for h in capped["results"]} <= {"20", "19", "18", "17", "16"}


def test_episodes_newest_first_with_dates(runner, ctx):
    say(ctx, at(2026, 8, 30, 10, 0, 0), "", author="scv")
    say(ctx, at(2026, 8, 30, 10, 0, 1), "first question " + "q" * 300)
    mark_new(ctx.channel.log, at(2026, 8, 30, 11, 0, 0))
    say(ctx, at(2026, 9, 1, 10, 0, 0), "second")
    say(ctx, at(2026, 9, 1, 10, 5, 0), "reply", author="scv")
    say(ctx, at(2026, 9, 5, 10, 0, 0), "", files=[FileEntry(name="cat.jpg", state="not_saved")])
    listed = history(runner, action="episodes")["episodes"]
    assert [e["episode"][-19:] for e in listed] == ["2026-09-05T10-00-00", "2026-09-01T10-00-00",
                                                     "2026-08-30T10-00-00"]
    oldest = listed[-1]
    assert oldest["messages"] == 2 and oldest["ended_by_new"] is True and oldest["first"] == "2026-08-30T10:00:00+08:00"
    assert oldest["opening"] == ("first question " + "q" * 300)[:200] and oldest["last"] == "2026-08-30T10:00:01+08:00"
    assert listed[1]["ended_by_new"] is False and listed[1]["messages"] == 2 and listed[0]["opening"] == "[cat.jpg]"
    assert [e["episode"][-19:-9] for e in history(runner, action="episodes", before="2026-09-05")["episodes"]] == [
        "2026-09-01", "2026-08-30"]
    assert len(history(runner, action="episodes", after="2026-09-01")["episodes"]) == 2
    one = history(runner, action="episodes", after="2026-08-01", before="2026-09-02", limit=1)
    assert len(one["episodes"]) == 1 and one["more"] is True


def test_read_pages_an_episode_and_shows_file_states(runner, ctx, workspace):
    media = ctx.channel.media
    here = sent_file(ctx.channel, "a1-here.jpg")
    kept_from = os.path.join(media, "a2-kept.jpg")
    record_kept(ctx.channel.log, kept_from, os.path.join(ctx.channel.kept, "a2-kept.jpg"), at(2026, 9, 1, 12, 0, 0))
    files = [FileEntry(name="here.jpg", state="media", path=str(here), kind="image", bytes=32),
             FileEntry(name="kept.jpg", state="media", path=kept_from),
             FileEntry(name="old.jpg", state="media", path=os.path.join(media, "a3-old.jpg")),
             FileEntry(name="elsewhere.jpg", state="media", path=str(workspace / "x.jpg")),
             FileEntry(name="big.mov", state="not_saved"), FileEntry(name="chart.png", state="sent")]
    episode, _ = say(ctx, at(2026, 9, 1, 9, 0, 0), "long " * 2000, files=files, voice=Voice(transcript="hello"))
    for n in range(1, 45):
        say(ctx, at(2026, 9, 1, 9, 0, n), f"m{n}")
    page = history(runner, action="read", episode=episode)
    assert page["total"] == 45 and len(page["messages"]) == 30 and page["more"] is True and page["next_offset"] == 30
    first = page["messages"][0]
    assert len(first["text"]) == 8000 and first["text_truncated"] is True and first["transcript"] == "hello"
    assert [(f["name"], f["state"], f.get("path")) for f in first["files"]] == [
        ("here.jpg", "media", str(here)), ("kept.jpg", "kept", os.path.join(ctx.channel.kept, "a2-kept.jpg")),
        ("old.jpg", "gone", None), ("elsewhere.jpg", "gone", None), ("big.mov", "not_saved", None),
        ("chart.png", "sent", None)]
    rest = history(runner, action="read", episode=episode, offset=30)
    assert [m["index"] for m in rest["messages"]] == list(range(30, 45)) and rest["more"] is False
    missing = call(runner, "chat_history", action="read", episode="2026/2026-08-31_2026-09-06/2026-09-01T09-00-01")
    assert not missing.ok and "has no episode" in missing.value["error"]


def test_results_are_kept_within_the_output_limit(supervisor, workspace, scv_home):
    ctx = channel_ctx(workspace, config=Config(tools=ToolsConfig(output_limit_bytes=4096)))
    runner = runner_for(supervisor, ctx)
    episode, _ = say(ctx, at(2026, 9, 1, 9, 0, 0), "x" * 2000)
    for n in range(1, 30):
        say(ctx, at(2026, 9, 1, 9, 0, n), "y" * 1500)
    page = history(runner, action="read", episode=episode)
    assert len(page["messages"]) == 2 and page["more"] is True and page["next_offset"] == 2 and page["total"] == 30
    hits = history(runner, action="search", query="y", limit=100)
    assert hits["more"] is True and 0 < len(hits["results"]) < 29
    assert len(msgspec.json.encode(hits)) <= 4096 and len(msgspec.json.encode(page)) <= 4096


@pytest.mark.parametrize("args, sentence", [
    ({"action": "read", "episode": "../../etc/passwd"}, "is not an episode ID"),
    ({"action": "read", "episode": "2026/2026-09-21_2026-09-27/2026-09-26T14-04-05.jsonl"}, "is not an episode ID"),
    ({"action": "read", "episode": "2026/2026-09-14_2026-09-20/2026-09-26T14-04-05"}, "is not an episode ID"),
    ({"action": "read"}, "needs an episode ID"),
    ({"action": "search"}, "needs a query"),
    ({"action": "search", "query": "   "}, "needs a query"),
    ({"action": "search", "query": "x", "episode": "2026/2026-09-21_2026-09-27/2026-09-26T14-04-05"},
     "search takes limit and query, not episode"),
    ({"action": "episodes", "before": "2026-13-01"}, "is not a date"),
    ({"action": "episodes", "after": "yesterday"}, "is not a date"),
    ({"action": "episodes", "after": "2026-09-02", "before": "2026-09-01"}, "after must be a date earlier"),
    ({"action": "search", "query": "x", "limit": 101}, "limit"),
    ({"action": "delete"}, "action"),
])
def test_refused_arguments(runner, args, sentence):
    with pytest.raises(RefusedError, match=sentence):
        runner.prepare("chat_history", args)


def test_an_episode_file_swapped_for_a_link_is_not_read(runner, ctx, tmp_path):
    episode, _ = say(ctx, at(2026, 9, 1, 9, 0, 0), "mine")
    other = tmp_path / "other"
    other_episode, _ = append_message(other, Message(time=at(2026, 9, 1, 9, 0, 0), author="owner", text="SECRET"))
    mine = Path(ctx.channel.log) / (episode + ".jsonl")
    mine.unlink()
    mine.symlink_to(other / (other_episode + ".jsonl"))
    result = call(runner, "chat_history", action="read", episode=episode)
    assert not result.ok and "SECRET" not in str(result.value)
    assert history(runner, action="search", query="secret")["results"] == []


def test_a_log_folder_swapped_for_a_link_reads_nothing(runner, ctx, tmp_path):
    say(ctx, at(2026, 9, 1, 9, 0, 0), "mine")
    other = tmp_path / "other"
    append_message(other, Message(time=at(2026, 9, 1, 9, 0, 0), author="owner", text="SECRET"))
    Path(ctx.channel.log).rename(tmp_path / "moved")
    Path(ctx.channel.log).symlink_to(other)
    assert history(runner, action="search", query="secret")["results"] == []
    assert history(runner, action="episodes")["episodes"] == []


def test_the_tools_need_the_log(supervisor, workspace, scv_home):
    from scv.tools.registry import build_registry
    without = channel_ctx(workspace, log=False)
    assert set(build_registry(without).names()) & {"chat_attach", "chat_history", "chat_keep"} == {"chat_attach"}
    with_log = channel_ctx(workspace)
    assert {"chat_attach", "chat_history", "chat_keep"} <= set(build_registry(with_log).names())
