"""Longer runs over the skills and chat validators (see tests/test_skills.py and
tests/test_chat_*.py): the front matter parser on arbitrary bytes, episode IDs, episode lines,
search queries over a small real log, and chat_attach's refusal of every secret location."""

import os
import tempfile
from datetime import datetime, timedelta, timezone

from hypothesis import given
from hypothesis import strategies as st

from scv.core.chat.archive import Message, append_message, decode_line
from scv.core.chat.history import Log, search
from scv.core.chat.layout import episode_id, episode_start
from scv.core.chat.refusals import BROWSER_PROFILES, HOME_SECRETS, HOST_SECRETS, AttachRules, path_refusal
from scv.skills.front_matter import NAME, FrontMatterError, parse

_LOG = tempfile.mkdtemp(prefix="scv-fuzz-chat-")
_START = datetime(2026, 9, 26, 8, 0, 0, tzinfo=timezone(timedelta(hours=8)))
_SAMPLES = ["Die Straße", "\u212aelvin", "\ufb01ne", 'a "quoted" \\u word', "今天 天气", "plain"]
_TEXTS = {append_message(_LOG, Message(time=_START + timedelta(hours=9 * n), author="owner", text=text),
                         sync=False): text for n, text in enumerate(_SAMPLES)}
_RULES = AttachRules(home="/h/.scv", archive="/h/.scv/archive", media="/h/.scv/state/media/wechat/a/0123456789abcdef",
                     kept="/h/.scv/archive/wechat/a/c/files", outbox="/h/.scv/state/media/outbox", user_homes=("/h",))


@given(st.binary(max_size=3000) | st.text(max_size=600).map(lambda t: ("---\n" + t + "\n---\n").encode()))
def front_matter_accepts_only_valid_skills(head):
    try:
        matter = parse(head)
    except FrontMatterError:
        return
    assert NAME.fullmatch(matter.name) and 0 < len(matter.description) <= 1024
    assert "\n" not in matter.description and "\r" not in matter.description


@given(st.text(max_size=80))
def only_the_log_shape_is_an_episode_id(text):
    start = episode_start(text)
    assert start is None or episode_id(start) == text


@given(st.binary(max_size=500))
def episode_lines_never_crash_the_reader(line):
    decode_line(line)


_PIECES = st.sampled_from(["STRASSE", "straße", "kelvin", "K", "FINE", "fi", '"quoted"', "\\U", "今天", "天气",
                           "PLAIN", "a", "die", "Ｐlain", "word"])


@given(st.lists(_PIECES | st.text(max_size=5), min_size=1, max_size=3).map(" ".join).filter(str.split))
def search_finds_exactly_the_messages_holding_every_word(query):
    log = Log(_LOG)
    try:
        hits, _ = search(log, query, 10, [1 << 20])
    finally:
        log.close()
    words = [word.casefold() for word in query.split()]
    expected = {key for key, text in _TEXTS.items() if all(word in text.casefold() for word in words)}
    assert {(hit["episode"], hit["index"]) for hit in hits} == expected


@given(entry=st.sampled_from(HOME_SECRETS + BROWSER_PROFILES + HOST_SECRETS + ("/h/.scv",)),
       rest=st.lists(st.text(st.characters(blacklist_characters="/\x00"), min_size=1, max_size=10), max_size=3))
def every_secret_location_is_refused(entry, rest):
    base = entry if entry.startswith("/") else os.path.join("/h", entry)
    path = os.path.join(base, *rest)
    assert path_refusal(_RULES, path, path) is not None


HARNESSES = [front_matter_accepts_only_valid_skills, only_the_log_shape_is_an_episode_id,
             episode_lines_never_crash_the_reader, search_finds_exactly_the_messages_holding_every_word,
             every_secret_location_is_refused]
