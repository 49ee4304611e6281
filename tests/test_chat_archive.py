"""The chat archive's one writer and its reader: the episode rule (/new, eight quiet hours), IDs,
a line cut by a crash, writers in several processes, and a hypothesis round trip of generated
conversations through `append_message` / `mark_new` and back through `scv.core.chat.history`."""

import hashlib
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scv.core.chat.archive import FileEntry, Message, Voice, append_message, iter_episodes, mark_new
from scv.core.chat.history import Files, Log, episodes, read, search
from scv.core.chat.layout import episode_id, episode_start, media_digest, media_dir
from tests.chat_fakes import at
from tests.conftest import scv_env


def lines(folder: Path, episode: str) -> list[str]:
    return (folder / (episode + ".jsonl")).read_text().splitlines()


def test_ids_and_folders_follow_the_layout(tmp_path):
    assert episode_id(at(2026, 9, 26, 14, 4, 5).replace(tzinfo=None)) == \
        "2026/2026-09-21_2026-09-27/2026-09-26T14-04-05"
    assert episode_id(at(2027, 1, 2, 0, 0, 0)) == "2027/2026-12-28_2027-01-03/2027-01-02T00-00-00"
    assert media_digest("wxid_1") == hashlib.sha256(b"wxid_1").hexdigest()[:16]
    assert media_dir("/h", "wechat", "default", "wxid_1") == f"/h/state/media/wechat/default/{media_digest('wxid_1')}"
    for bad in ("2026/2026-09-21_2026-09-27/2026-09-26T14-04-05.jsonl", "../2026/x", "2026/2026-09-14_2026-09-20/"
                "2026-09-26T14-04-05", "2025/2026-09-21_2026-09-27/2026-09-26T14-04-05",
                "2026/2026-09-21_2026-09-27/2026-09-26T25-04-05", "2026/2026-09-21_2026-09-27/2026-09-26T14:04:05", ""):
        assert episode_start(bad) is None, bad


@settings(max_examples=500, deadline=None)
@given(st.text(max_size=60))
def test_no_other_shape_is_an_episode_id(text):
    start = episode_start(text)
    assert start is None or episode_id(start) == text


def test_the_episode_rule(tmp_path):
    folder = tmp_path / "c"
    first = append_message(folder, {"time": at(2026, 9, 26, 8, 0, 0), "author": "owner", "text": "hi"})
    assert first == ("2026/2026-09-21_2026-09-27/2026-09-26T08-00-00", 0)
    same = append_message(folder, Message(time=at(2026, 9, 26, 15, 59, 59), author="scv", text="yes"))
    assert same == (first[0], 1)
    gap = append_message(folder, Message(time=at(2026, 9, 26, 23, 59, 59), author="owner", text="eight hours on"))
    assert gap == ("2026/2026-09-21_2026-09-27/2026-09-26T23-59-59", 0)
    assert mark_new(folder, at(2026, 9, 27, 0, 0, 0)) == gap[0]
    assert mark_new(folder, at(2026, 9, 27, 0, 0, 1)) is None        # already ended
    after = append_message(folder, Message(time=at(2026, 9, 27, 0, 0, 2), author="owner", text="fresh"))
    assert after == ("2026/2026-09-21_2026-09-27/2026-09-27T00-00-02", 0)
    assert list(iter_episodes(str(folder))) == [after[0], gap[0], first[0]]
    assert mark_new(tmp_path / "empty", at(2026, 1, 1, 0, 0, 0)) is None
    with pytest.raises(ValueError, match="UTC offset"):
        append_message(folder, {"time": "2026-09-27T01:00:00", "author": "owner"})


def test_an_id_that_is_taken_or_would_sort_earlier_moves_on_a_second(tmp_path):
    folder = tmp_path / "c"
    one = append_message(folder, Message(time=at(2026, 3, 1, 12, 0, 0), author="owner", text="a"))[0]
    mark_new(folder, at(2026, 3, 1, 12, 0, 0))
    two = append_message(folder, Message(time=at(2026, 3, 1, 12, 0, 0), author="owner", text="b"))[0]
    assert one == "2026/2026-02-23_2026-03-01/2026-03-01T12-00-00"
    assert two == "2026/2026-02-23_2026-03-01/2026-03-01T12-00-01"
    mark_new(folder, at(2026, 3, 1, 12, 0, 0))
    # The clock was set back an hour: the new episode still sorts after the newest.
    three = append_message(folder, Message(time=at(2026, 3, 1, 11, 0, 0), author="owner", text="c"))[0]
    assert three > two and list(iter_episodes(str(folder)))[0] == three


def test_a_line_cut_by_a_crash_is_closed_and_skipped(tmp_path):
    folder = tmp_path / "c"
    episode, _ = append_message(folder, Message(time=at(2026, 9, 26, 8, 0, 0), author="owner", text="one"))
    with open(folder / (episode + ".jsonl"), "ab") as fh:
        fh.write(b'{"time":"2026-09-26T08:01:00+08:00","author":"ow')
    assert append_message(folder, Message(time=at(2026, 9, 26, 8, 2, 0), author="scv", text="two")) == (episode, 1)
    assert len(lines(folder, episode)) == 3
    log = Log(str(folder))
    shown = read(log, episode, 0, 30, Files(media="/m", kept={}))
    assert [m["text"] for m in shown["messages"]] == ["one", "two"] and shown["total"] == 2


def test_writers_in_several_processes_share_a_conversation(tmp_path):
    folder = tmp_path / "c"
    code = ("import sys\nfrom datetime import datetime, timezone\nfrom scv.core.chat.archive import append_message\n"
            "for n in range(60):\n"
            "    append_message(sys.argv[1], {'time': datetime.now(timezone.utc), 'author': 'owner',\n"
            "                                 'text': sys.argv[2]})\n")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(folder), f"w{n}"], env=scv_env()) for n in range(3)]
    assert [p.wait(120) for p in procs] == [0, 0, 0]
    log = Log(str(folder))
    shown = [read(log, e, 0, 1000, Files(media="/m", kept={})) for e in log.episodes()]
    messages = [m for s in shown for m in s["messages"]]
    assert len(messages) == 180 and all(len(s["messages"]) == s["total"] for s in shown)
    for s in shown:
        assert [m["index"] for m in s["messages"]] == list(range(s["total"]))


# --- the round trip ----------------------------------------------------------------------------

TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=80)
FILES = st.lists(st.builds(FileEntry, name=st.text(min_size=1, max_size=20),
                           state=st.sampled_from(["not_saved", "sent", "gone"])), max_size=2)
STEP = st.tuples(
    st.sampled_from(["message"] * 8 + ["new", "gap"]),
    st.builds(lambda author, text, quote, files, voice: Message(time=at(2000, 1, 1), author=author, text=text,
                                                                 quote=quote, files=files, voice=voice),
              st.sampled_from(["owner", "scv", "system"]), TEXT, st.none() | TEXT, FILES,
              st.none() | st.builds(Voice, transcript=TEXT)),
    st.integers(0, 3600))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(STEP, min_size=1, max_size=25))
def test_generated_conversations_round_trip(tmp_path_factory, steps):
    folder = tmp_path_factory.mktemp("conv")
    clock = at(2026, 9, 26, 8, 0, 0)
    expected: list[list[Message]] = []
    ended = True
    for action, message, seconds in steps:
        clock += timedelta(seconds=seconds)
        if action == "new":
            if mark_new(folder, clock, sync=False) is not None:
                ended = True
            continue
        if action == "gap":
            clock += timedelta(hours=8)
            ended = True
        message = Message(**{**{f: getattr(message, f) for f in Message.__struct_fields__}, "time": clock})
        if ended:
            expected.append([])
            ended = False
        episode, index = append_message(folder, message, sync=False)
        assert index == len(expected[-1])
        expected[-1].append(message)
    log = Log(str(folder))
    ids = list(log.episodes())
    assert len(ids) == len(expected)
    for episode, wanted in zip(reversed(ids), expected):
        start = episode_start(episode)      # a second later for each episode that took its ID first
        first = wanted[0].time.replace(tzinfo=None)
        assert first <= start <= first + timedelta(seconds=len(expected))
        shown = read(log, episode, 0, 100, Files(media="/m", kept={}))
        assert shown["total"] == len(wanted)
        for got, message in zip(shown["messages"], wanted):
            assert got["text"] == message.text and got["author"] == message.author
            assert got.get("quote") == (message.quote or None)
            assert got["time"] == message.time.isoformat(timespec="seconds")
            assert [f["name"] for f in got.get("files", [])] == [f.name for f in message.files]
            transcript = message.voice.transcript if message.voice else None
            assert got.get("transcript") == transcript
    listed, more = episodes(log, None, None, 100, [1 << 30])
    assert not more and [e["messages"] for e in listed] == [len(w) for w in reversed(expected)]
    # Every message is found by a word of its own text.
    for wanted in expected:
        for message in wanted:
            words = message.text.split()
            if words:
                hits, _ = search(log, words[0], 1000, [1 << 30])
                assert any(h["time"] == message.time.isoformat(timespec="seconds") for h in hits)


def test_a_batch_is_written_as_one_message_at_a_time_would_be(tmp_path):
    from scv.core.chat.archive import append_messages
    messages = [Message(time=at(2026, 9, 26, 8, 0, 0) + timedelta(hours=n * 3), author="owner", text=f"m{n}")
                for n in range(8)]
    one, many = tmp_path / "one", tmp_path / "many"
    placed = [append_message(one, message) for message in messages[:3]]
    placed += append_messages(many, messages[:3])[3:]
    assert append_messages(many, []) == []
    assert [append_message(one, m) for m in messages[3:]] == append_messages(many, messages[3:])
    assert sorted(p.relative_to(one) for p in one.rglob("*.jsonl")) == \
        sorted(p.relative_to(many) for p in many.rglob("*.jsonl"))
    for path in one.rglob("*.jsonl"):
        assert path.read_bytes() == (many / path.relative_to(one)).read_bytes()


def test_characters_whose_casefold_is_ascii_are_found_both_ways(tmp_path):
    from scv.core.chat.history import CASEFOLDS_TO_ASCII
    computed = "".join(chr(c) for c in range(128, 0x110000) if not 0xD800 <= c <= 0xDFFF
                       and any(ord(x) < 128 for x in chr(c).casefold()))
    assert CASEFOLDS_TO_ASCII == computed
    folder = tmp_path / "c"
    for n, text in enumerate(["Die Straße", "5 \u212aelvin", "\ufb01ne print", "plain ascii words", "ÉTÉ chaud",
                              "a \\u escape, literally"]):
        # Each in its own episode, so that one block's special characters do not help another's.
        append_message(folder, Message(time=at(2026, 9, 26, 8, 0, 0) + timedelta(hours=9 * n), author="owner",
                                       text=text))
    log = Log(str(folder))
    for query, expected in [("strasse", "Die Straße"), ("KELVIN", "5 \u212aelvin"), ("FINE", "\ufb01ne print"),
                            ("Words ASCII", "plain ascii words"), ("été", "ÉTÉ chaud"),
                            ("\\U", "a \\u escape, literally")]:
        hits, _ = search(log, query, 10, [1 << 30])
        assert [h["excerpt"] for h in hits] == [expected], query
