"""`chat_keep` through real workers: link-then-unlink, name clashes that never replace a file,
paths already kept, every refused path (another chat's file, a link, a folder, a nested or
outside path), a copy across file systems and a full disk during it (in-process seams, and for
real: a tmpfs in a mount namespace, skipped where one cannot be made)."""

import os
import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from scv.core.chat.archive import FileEntry, Message, append_message, read_kept
from scv.core.errors import RefusedError
from scv.tools.base import Risk
from scv.tools.chat_keep import ChatKeepTool
from tests.chat_fakes import ctx, runner  # noqa: F401 (fixtures)
from tests.chat_fakes import PNG, at, call, channel_ctx, sent_file
from tests.conftest import scv_env
from tests.stdio_client import StdioClient
from tests.fakes import write_script
from workers import chat_keep
from workers.private_copy import private_copy
from workers.runtime import ToolFailure


def kept_names(ctx) -> list[str]:
    try:
        return sorted(os.listdir(ctx.channel.kept))
    except FileNotFoundError:
        return []


def test_a_media_file_is_linked_under_its_kept_name_then_removed(runner, ctx):
    photo = sent_file(ctx.channel, "a1b2c3-cat.jpg")
    append_message(ctx.channel.log, Message(time=at(2026, 9, 1, 9, 0, 0), author="owner",
                                            files=[FileEntry(name="cat.jpg", state="media", path=str(photo))]))
    inode = photo.stat().st_ino
    prepared = runner.prepare("chat_keep", {"path": str(photo)})
    assert prepared.risk is Risk.FILESYSTEM and "keep a1b2c3-cat.jpg" in prepared.summary
    result = runner.run(prepared)
    assert result.ok, result.value
    kept = Path(ctx.channel.kept) / "a1b2c3-cat.jpg"
    assert result.value == {"kept": str(kept), "from": str(photo), "bytes": len(PNG), "renamed": False,
                            "copied_across_file_systems": False}
    assert not photo.exists() and kept.read_bytes() == PNG and kept.stat().st_ino == inode
    assert read_kept(ctx.channel.log) == {str(photo): str(kept)}
    episode = next(iter(os.listdir(Path(ctx.channel.log) / "2026")))
    shown = call(runner, "chat_history", action="read", episode=f"2026/{episode}/2026-09-01T09-00-00").value
    assert shown["messages"][0]["files"][0] == {"name": "cat.jpg", "state": "kept", "path": str(kept)}
    again = call(runner, "chat_keep", path=str(photo)).value
    assert again == {"kept": str(kept), "already": True}
    assert call(runner, "chat_keep", path=str(kept)).value == {"kept": str(kept), "already": True, "bytes": len(PNG)}


def test_a_name_clash_gets_a_new_name_and_never_replaces(runner, ctx):
    kept_dir = Path(ctx.channel.kept)
    kept_dir.mkdir(parents=True)
    (kept_dir / "cat.jpg").write_bytes(b"the first cat")
    (kept_dir / "cat (2).jpg").write_bytes(b"the second cat")
    photo = sent_file(ctx.channel, "cat.jpg")
    value = call(runner, "chat_keep", path=str(photo)).value
    assert value["kept"] == str(kept_dir / "cat (3).jpg") and value["renamed"] is True
    assert (kept_dir / "cat.jpg").read_bytes() == b"the first cat"
    assert (kept_dir / "cat (2).jpg").read_bytes() == b"the second cat"
    assert list(chat_keep.candidates(".bashrc"))[:2] == [".bashrc", ".bashrc (2)"]
    assert list(chat_keep.candidates("notes"))[:2] == ["notes", "notes (2)"]


def test_paths_outside_this_chats_media_are_refused(runner, ctx, workspace, tmp_path):
    other = channel_ctx(workspace, conversation="wxid_stranger").channel
    theirs = sent_file(other, "x.jpg")
    for path in (str(theirs), str(workspace / "x.jpg"), "x.jpg", os.path.join(ctx.channel.media, "sub", "x.jpg"),
                 ctx.channel.media, os.path.join(ctx.channel.media, "..")):
        with pytest.raises(RefusedError, match="chat_keep"):
            runner.prepare("chat_keep", {"path": path})
    assert theirs.exists()
    (tmp_path / "outside.jpg").write_bytes(PNG)
    link = sent_file(ctx.channel, "placeholder")
    link.unlink()
    link.symlink_to(tmp_path / "outside.jpg")
    refused = call(runner, "chat_keep", path=str(link))
    assert not refused.ok and "it is a symbolic link" in refused.value["error"]
    (Path(ctx.channel.media) / "folder").mkdir()
    folder = call(runner, "chat_keep", path=os.path.join(ctx.channel.media, "folder"))
    assert "not a regular file" in folder.value["error"]
    gone = call(runner, "chat_keep", path=os.path.join(ctx.channel.media, "expired.jpg"))
    assert not gone.ok and "is not in the chat media" in gone.value["error"]
    assert kept_names(ctx) == [] and (tmp_path / "outside.jpg").exists()


class _Token:
    def check(self) -> bool:
        return False


def _keep(ctx, path: Path, **seams) -> dict:
    spec = ChatKeepTool()
    args = spec.worker_args(spec.parse({"path": str(path)}, ctx), ctx)
    return chat_keep.keep(args, SimpleNamespace(token=_Token()), **seams)


def _cross_device(*args, **kw):
    raise OSError(18, "Invalid cross-device link")


def test_across_file_systems_it_is_copied_to_a_private_file_first(ctx):
    photo = sent_file(ctx.channel, "cat.jpg", PNG * 100)
    value = _keep(ctx, photo, link=_cross_device)
    kept = Path(value["kept"])
    assert value["copied_across_file_systems"] is True and kept.read_bytes() == PNG * 100
    assert oct(kept.stat().st_mode & 0o777) == "0o600" and not photo.exists()
    assert kept_names(ctx) == ["cat.jpg"]


def test_a_full_disk_during_the_copy_leaves_nothing_and_keeps_the_original(ctx, monkeypatch):
    photo = sent_file(ctx.channel, "cat.jpg", PNG * 100_000)

    def filling(source_fd, dir_fd, **kw):
        written = []

        def write(fd, data):
            if written:
                raise OSError(28, "No space left on device")
            written.append(len(data))
            return os.write(fd, data)
        return private_copy(source_fd, dir_fd, write=write, **kw)
    monkeypatch.setattr(chat_keep, "private_copy", filling)
    with pytest.raises(ToolFailure, match="No space left on device.*nothing was kept"):
        _keep(ctx, photo, link=_cross_device)
    assert kept_names(ctx) == [] and photo.read_bytes() == PNG * 100_000


def test_a_record_that_cannot_be_written_undoes_the_link(ctx, monkeypatch):
    photo = sent_file(ctx.channel, "cat.jpg")

    def no_record(*args):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(chat_keep, "record_kept", no_record)
    with pytest.raises(ToolFailure, match="record of kept files cannot be written"):
        _keep(ctx, photo)
    assert kept_names(ctx) == [] and photo.read_bytes() == PNG


# --- for real: the kept files on a tmpfs in a mount namespace ------------------------------------

def _namespaces_work(tmp_path: Path) -> str | None:
    if shutil.which("unshare") is None:
        return "unshare is not installed"
    probe = subprocess.run(["unshare", "-rm", "sh", "-c", 'mount -t tmpfs -o size=16k none "$0"', str(tmp_path)],
                           capture_output=True, text=True)
    return None if probe.returncode == 0 else f"no mount namespace here: {probe.stderr.strip()[:200]}"


@pytest.mark.parametrize("size, data, works", [("1m", PNG * 1000, True), ("16k", PNG * 10_000, False)])
def test_keep_onto_another_file_system_for_real(workspace, scv_home, tmp_path, size, data, works):
    reason = _namespaces_work(tmp_path)
    if reason:
        pytest.skip(reason)
    ctx = channel_ctx(workspace)
    photo = sent_file(ctx.channel, "cat.jpg", data)
    archive = Path(ctx.channel.archive)
    archive.mkdir(parents=True, exist_ok=True)
    script = write_script(tmp_path / "s.jsonl",
                          {"calls": [{"id": "k", "tool": "chat_keep", "args": {"path": str(photo)}},
                                     {"id": "ls", "tool": "bash",
                                      "args": {"command": f"ls -A {ctx.channel.kept} 2>&1; "
                                                          f"df -k {archive} | tail -1"}}]},
                          {"text": "kept"})
    prefix = ("unshare", "-rm", "sh", "-c", f'mount -t tmpfs -o size={size} none "$0" && exec "$@"', str(archive))
    client = StdioClient("--script", str(script), prefix=prefix, env=scv_env())
    try:
        client.start(cwd=str(workspace), auto_approve=True,
                     channel={"kind": "wechat", "account": "default", "conversation": "wxid_owner",
                              "log": ctx.channel.log})
        client.request("turn.start", {"prompt": "keep it"})
        client.until("turn.completed", timeout=60)
        results = {p["call_id"]: p for p in client.notifications("tool.completed")}
    finally:
        client.kill()
    listing = results["ls"]["result"]["output"]
    assert "tmpfs" in listing or "none" in listing
    if works:
        assert results["k"]["ok"], results["k"]
        assert results["k"]["result"]["copied_across_file_systems"] is True
        assert listing.split("\n")[0] == "cat.jpg" and not photo.exists()
    else:
        assert not results["k"]["ok"] and "nothing was kept" in results["k"]["result"]["error"]
        assert "cat.jpg" not in listing and ".part" not in listing and photo.read_bytes() == data
