"""`read` and `write` through the real supervisor."""

import hashlib
import os
import signal
import threading
import time

import pytest

from scv.config.load import Config, ToolsConfig
from scv.core.errors import RefusedError
from scv.core.oscalls import REAL
from scv.tools.base import Risk


def call(runner, tool, **args):
    return runner.run(runner.prepare(tool, args))


def test_read_whole_file(runner, workspace):
    (workspace / "a.txt").write_text("héllo\n")
    value = call(runner, "read", path="a.txt").value
    assert value["content"] == "héllo\n"
    assert value["total_bytes"] == 7 and value["truncated"] is False
    assert value["offset"] == 0 and value["limit"] == 65536


def test_read_a_range_and_page_through(runner, workspace):
    (workspace / "n.txt").write_text("0123456789")
    first = call(runner, "read", path="n.txt", offset=2, limit=3).value
    assert first["content"] == "234" and first["truncated"] is True and first["next_offset"] == 5
    last = call(runner, "read", path="n.txt", offset=8, limit=100).value
    assert last["content"] == "89" and last["truncated"] is False


def test_read_limit_is_capped_by_the_output_limit(make_runner, workspace):
    runner = make_runner(Config(tools=ToolsConfig(output_limit_bytes=1024)))
    (workspace / "big.txt").write_text("x" * 5000)
    value = call(runner, "read", path="big.txt", limit=4000).value
    assert value["limit"] == 1024 and len(value["content"]) == 1024 and value["truncated"] is True


def test_a_character_split_by_the_limit_is_left_for_the_next_read(runner, workspace):
    (workspace / "u.txt").write_text("aé")          # b"a\xc3\xa9"
    value = call(runner, "read", path="u.txt", limit=2).value
    assert value["content"] == "a" and value["next_offset"] == 1
    rest = call(runner, "read", path="u.txt", offset=1).value
    assert rest["content"] == "é"


def test_invalid_utf8_is_a_clear_error(runner, workspace):
    (workspace / "bin.dat").write_bytes(b"ok\xff\xfe")
    result = call(runner, "read", path="bin.dat")
    assert not result.ok and "not valid UTF-8" in result.value["error"] and "offset 2" in result.value["error"]
    mid = call(runner, "read", path="bin.dat", offset=0, limit=2)
    assert mid.ok
    (workspace / "u.txt").write_text("é")
    inside = call(runner, "read", path="u.txt", offset=1)
    assert not inside.ok and "inside a UTF-8 character" in inside.value["error"]


@pytest.mark.parametrize("setup, message", [
    (lambda ws: None, "does not exist"),
    (lambda ws: (ws / "f").mkdir(), "not a regular file"),
    (lambda ws: os.mkfifo(ws / "f"), "not a regular file"),
    (lambda ws: (ws / "f").symlink_to("/etc/hostname"), "outside the workspace"),
])
def test_read_refuses_what_is_not_a_workspace_file(runner, workspace, setup, message):
    setup(workspace)
    result = call(runner, "read", path="f")
    assert not result.ok and message in result.value["error"]


@pytest.mark.parametrize("path", ["ok.txt/", "ok.txt//", "ok.txt/.", "sub/ok.txt/", "link/"])
def test_read_of_a_file_with_a_trailing_slash_is_not_a_directory(runner, workspace, path):
    (workspace / "ok.txt").write_text("ok")
    (workspace / "sub").mkdir()
    (workspace / "sub" / "ok.txt").write_text("ok")
    (workspace / "link").symlink_to("ok.txt")
    result = call(runner, "read", path=path)
    assert not result.ok
    assert result.value["error"] == (f"{path} is not a directory, yet a path ending in '/' must name one; drop the "
                                     "trailing '/' to name the file")
    assert call(runner, "read", path="sub/").value["error"] == "sub/ is not a regular file; read only reads files"
    assert "does not exist" in call(runner, "read", path="missing/").value["error"]


def test_read_offset_past_the_end(runner, workspace):
    (workspace / "s").write_text("abc")
    result = call(runner, "read", path="s", offset=4)
    assert not result.ok and "past the end" in result.value["error"]


def test_secret_like_reads_have_filesystem_risk(runner):
    assert runner.prepare("read", {"path": ".env"}).risk is Risk.FILESYSTEM
    assert runner.prepare("read", {"path": "src/app.py"}).risk is Risk.READ_ONLY


def test_create_then_replace_with_expected_hash(runner, workspace):
    created = call(runner, "write", path="d/e/new.txt", content="one\n", mode="create")
    assert created.ok and created.value["bytes"] == 4
    assert created.value["sha256"] == hashlib.sha256(b"one\n").hexdigest()
    assert (workspace / "d/e/new.txt").read_text() == "one\n"
    again = call(runner, "write", path="d/e/new.txt", content="x", mode="create")
    assert not again.ok and "already exists" in again.value["error"]
    replaced = call(runner, "write", path="d/e/new.txt", content="two\n", mode="replace",
                    expected_sha256=created.value["sha256"])
    assert replaced.ok
    stale = call(runner, "write", path="d/e/new.txt", content="three\n", mode="replace",
                 expected_sha256=created.value["sha256"])
    assert not stale.ok and "changed since it was read" in stale.value["error"]
    assert stale.value["current_sha256"] == hashlib.sha256(b"two\n").hexdigest()
    assert (workspace / "d/e/new.txt").read_text() == "two\n"
    assert sorted(os.listdir(workspace / "d/e")) == ["new.txt"]


def test_replace_needs_an_existing_file_and_keeps_its_mode(runner, workspace):
    missing = call(runner, "write", path="nope.txt", content="x", mode="replace")
    assert not missing.ok and "does not exist" in missing.value["error"]
    script = workspace / "run.sh"
    script.write_text("old")
    script.chmod(0o750)
    assert call(runner, "write", path="run.sh", content="new", mode="replace").ok
    assert (script.stat().st_mode & 0o777) == 0o750 and script.read_text() == "new"


def test_write_refuses_links_and_escapes(runner, workspace, tmp_path):
    (workspace / "link").symlink_to("target")
    (workspace / "target").write_text("t")
    result = call(runner, "write", path="link", content="x", mode="replace")
    assert not result.ok and "symbolic link" in result.value["error"]
    (workspace / "out").symlink_to(tmp_path)
    escaped = call(runner, "write", path="out/evil.txt", content="x", mode="create")
    assert not escaped.ok and "outside the workspace" in escaped.value["error"]
    assert not (tmp_path / "evil.txt").exists()
    with pytest.raises(RefusedError, match="'..'"):
        runner.prepare("write", {"path": "../evil.txt", "content": "x", "mode": "create"})
    with pytest.raises(RefusedError, match="expected_sha256 goes with mode replace"):
        runner.prepare("write", {"path": "a", "content": "x", "mode": "create", "expected_sha256": "0" * 64})


@pytest.mark.parametrize("path", ["ok.txt/", "ok.txt/.", "new/", "d/new.txt/", "sub/"])
def test_write_to_a_path_with_a_trailing_slash_is_refused_before_anything_is_made(runner, workspace, path):
    (workspace / "ok.txt").write_text("ok")
    (workspace / "sub").mkdir()
    for mode in ("create", "replace"):
        with pytest.raises(RefusedError) as err:
            runner.prepare("write", {"path": path, "content": "x", "mode": mode})
        assert str(err.value) == (f"path {path!r} ends with '/', so it names a directory; write writes a file: "
                                  "drop the trailing '/'")
    assert sorted(os.listdir(workspace)) == ["ok.txt", "sub"] and (workspace / "ok.txt").read_text() == "ok"


def _kill_fork_point_children(fork_point: int, stop: threading.Event) -> None:
    while not stop.is_set():
        time.sleep(0.005 + (os.getpid() % 7) / 1000)
        for pid in REAL.children(fork_point):
            REAL.signal(pid, signal.SIGKILL)


def test_a_write_killed_midway_leaves_the_old_or_the_new_content(runner, workspace, supervisor):
    old, new = b"O" * (8 << 20), b"N" * (8 << 20)
    target = workspace / "big.bin.txt"
    target.write_bytes(old)
    prepared = runner.prepare("write", {"path": "big.bin.txt", "content": new.decode(), "mode": "replace"})
    outcomes = set()
    for attempt in range(12):
        stop = threading.Event()
        killer = threading.Thread(target=_kill_fork_point_children, args=(supervisor.fork_point_pid, stop))
        killer.start()
        try:
            result = runner.run(prepared)
        finally:
            stop.set()
            killer.join()
        content = target.read_bytes()
        assert content in (old, new), f"mixed content after attempt {attempt}"
        outcomes.add((result.ok, content == new))
        target.write_bytes(old)
        assert os.listdir(workspace) == ["big.bin.txt"]     # no temporary file left behind
    assert any(not ok for ok, _ in outcomes), "the killer never interrupted a write"
