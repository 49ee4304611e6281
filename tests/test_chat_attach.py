"""`chat_attach` over real file layouts: every refusal rule (links into `.ssh`, `/proc`, a FIFO,
an empty and an oversized sparse file, secret-like names, SCV's own folder, another chat's
media, the outbox), the copy and its delivery record through real workers, the swap race
through a hook between check and open, and a file that grows past the ceiling while copied."""

import json
import os
import stat
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scv.core.chat.refusals import BROWSER_PROFILES, HOME_SECRETS, HOST_SECRETS, MAX_BYTES, path_refusal
from scv.core.errors import RefusedError
from scv.tools.base import Risk
from scv.tools.chat_attach import ChatAttachTool
from tests.chat_fakes import PNG, call, channel_ctx, outbox_names, runner_for, sent_file
from workers import chat_attach
from workers.private_copy import private_copy


@pytest.fixture
def user_home(tmp_path, monkeypatch) -> Path:
    home = tmp_path / "user"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE KEY")
    (home / ".ssh" / "config").write_text("Host *")
    monkeypatch.setenv("HOME", str(home))
    return home


@pytest.fixture
def ctx(workspace, scv_home, user_home):
    return channel_ctx(workspace)


@pytest.fixture
def runner(supervisor, ctx):
    return runner_for(supervisor, ctx)


def refusal(runner, path, **more) -> str:
    with pytest.raises(RefusedError) as caught:
        call(runner, "chat_attach", path=str(path), **more)
    return str(caught.value)


def test_a_file_is_copied_into_the_outbox_with_its_delivery_record(runner, ctx, workspace):
    (workspace / "out").mkdir()
    (workspace / "out" / "chart.png").write_bytes(PNG)
    prepared = runner.prepare("chat_attach", {"path": "out/chart.png", "caption": "Sales by month"})
    assert prepared.risk is Risk.NETWORK and "to the WeChat chat wxid_owner" in prepared.summary
    result = runner.run(prepared)
    assert result.ok, result.value
    value = result.value
    assert value["name"] == "chart.png" and value["kind"] == "image" and value["bytes"] == len(PNG)
    copy, record_path = Path(value["copy"]), Path(value["delivery"])
    assert copy.parent == Path(ctx.channel.outbox) and copy.read_bytes() == PNG
    assert stat.S_IMODE(copy.stat().st_mode) == 0o600 and stat.S_IMODE(record_path.stat().st_mode) == 0o600
    assert stat.S_IMODE(copy.parent.stat().st_mode) == 0o700
    record = json.loads(record_path.read_text())
    assert record["file"] == copy.name and record["caption"] == "Sales by month" and record["kind"] == "image"
    assert record["channel"] == {"kind": "wechat", "account": "default", "conversation": "wxid_owner"}
    assert record["source"] == str(workspace / "out" / "chart.png")
    assert ctx.channel.reply == [value] and ctx.channel.captioned("Done.") == "Done.\n\nchart.png: Sales by month"
    assert sorted(outbox_names(ctx.channel)) == sorted([copy.name, record_path.name])     # no temporary left


@pytest.mark.parametrize("head, kind", [(b"\xff\xd8\xff\xe0" + b"\x00" * 12, "image"),
                                        (b"RIFF\x00\x00\x00\x00WEBPVP8 ", "image"),
                                        (b"\x00\x00\x00\x18ftypmp42\x00\x00", "video"),
                                        (b"\x1a\x45\xdf\xa3\x01", "video"),
                                        (b"\x00\x00\x00\x18ftypheic\x00\x00", "file"), (b"%PDF-1.7", "file")])
def test_kind_is_decided_by_content(head, kind):
    assert chat_attach.kind_of(head) == kind


def test_links_into_ssh_and_host_secrets_are_refused(runner, workspace, user_home, tmp_path):
    (tmp_path / "hop").mkdir()
    (tmp_path / "hop" / "two").symlink_to(user_home / ".ssh" / "config")
    (workspace / "innocent.png").symlink_to(tmp_path / "hop" / "two")
    assert f"it is under {user_home}/.ssh, where credentials and keys live" in refusal(runner, "innocent.png")
    (workspace / "keys").symlink_to(user_home / ".ssh")
    assert ".ssh" in refusal(runner, "keys/config")
    assert "/proc, which holds host secrets" in refusal(runner, "/proc/self/environ")
    (workspace / "env").symlink_to("/proc/self/environ")
    assert "host secrets" in refusal(runner, "env")
    assert "/etc/shadow, which holds host secrets" in refusal(runner, "/etc/shadow")
    for place in (".aws/credentials", ".config/gh/hosts.yml", ".mozilla/firefox/x/cookies.sqlite",
                  ".Docker/config.json"):
        target = user_home / place
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("x")
        assert f"{user_home}/" in refusal(runner, str(target))


def test_not_regular_empty_and_oversized_files_are_refused(runner, workspace):
    os.mkfifo(workspace / "pipe")
    assert "not a regular file" in refusal(runner, "pipe")
    (workspace / "folder").mkdir()
    assert "not a regular file" in refusal(runner, "folder")
    (workspace / "empty.txt").write_bytes(b"")
    assert "it is empty" in refusal(runner, "empty.txt")
    with open(workspace / "sparse.bin", "wb") as fh:
        fh.truncate(MAX_BYTES + 1)
    assert f"it is {MAX_BYTES + 1} bytes, over the 25 MiB" in refusal(runner, "sparse.bin")
    with open(workspace / "exact.bin", "wb") as fh:
        fh.truncate(MAX_BYTES)
    assert call(runner, "chat_attach", path="exact.bin").ok
    assert "does not exist" in refusal(runner, "missing.png")
    assert "'~', which is not expanded" in refusal(runner, "~/x.png")


@pytest.mark.parametrize("name", [".env", "prod.env", ".env.local", "aws_credentials.txt", "server.pem", "tls.key",
                                  "cert.p12", "cert.pfx", "vault.kdbx", "id_ed25519", "id_rsa", "my_private_key.txt"])
def test_secret_like_names_are_refused(runner, workspace, name):
    (workspace / name).write_text("x")
    assert "its name looks like it holds secrets" in refusal(runner, name)
    (workspace / f"link-{len(name)}.txt").symlink_to(workspace / name)
    assert "looks like it holds secrets" in refusal(runner, f"link-{len(name)}.txt")


def test_scv_home_is_refused_except_this_chats_media_and_kept_files(runner, ctx, workspace, scv_home):
    (scv_home / "config.toml").write_text("# settings")
    assert "inside SCV's own folder" in refusal(runner, scv_home / "config.toml")
    (workspace / "settings.txt").symlink_to(scv_home / "config.toml")
    assert "inside SCV's own folder" in refusal(runner, "settings.txt")
    other = channel_ctx(workspace, conversation="wxid_stranger").channel
    theirs = sent_file(other, "their.png")
    assert "another chat's media folder" in refusal(runner, theirs)
    ours = sent_file(ctx.channel, "a1b2-cat.png")
    assert call(runner, "chat_attach", path=str(ours)).ok
    kept = Path(ctx.channel.kept) / "kept.png"
    kept.parent.mkdir(parents=True)
    kept.write_bytes(PNG)
    assert call(runner, "chat_attach", path=str(kept)).ok
    their_kept = Path(other.kept) / "x.png"
    their_kept.parent.mkdir(parents=True)
    their_kept.write_bytes(PNG)
    assert "in the chat archive" in refusal(runner, their_kept)
    log = Path(ctx.channel.conversation_dir) / "2026" / "x.jsonl"
    log.parent.mkdir(parents=True)
    log.write_text("{}\n")
    assert "in the chat archive" in refusal(runner, log)
    copy = Path(ctx.channel.outbox) / sorted(n for n in outbox_names(ctx.channel) if not n.endswith(".json"))[0]
    assert "the outbox" in refusal(runner, copy)


def test_a_reply_carries_at_most_eight_files_and_captions_are_bounded(runner, ctx, workspace):
    (workspace / "p.png").write_bytes(PNG)
    for _ in range(8):
        assert call(runner, "chat_attach", path="p.png").ok
    assert "was not sent: a reply carries at most 8 files" in refusal(runner, "p.png")
    ctx.channel.begin_reply()
    assert "caption is over 1024 bytes" in refusal(runner, "p.png", caption="é" * 513)
    assert call(runner, "chat_attach", path="p.png", caption="é" * 512).ok


# --- the worker's second look, through the open handle ----------------------------------------

class _Token:
    def check(self) -> bool:
        return False


def _attach(ctx, path: str, **hooks) -> dict:
    spec = ChatAttachTool()
    args = spec.worker_args(spec.parse({"path": path}, ctx), ctx)
    return chat_attach.attach(args, SimpleNamespace(token=_Token()), **hooks)


def test_a_file_swapped_for_a_link_between_check_and_open_is_refused(ctx, workspace, user_home):
    from workers.runtime import ToolFailure
    target = workspace / "photo.png"
    target.write_bytes(PNG)

    def swap():
        target.unlink()
        target.symlink_to(user_home / ".ssh" / "id_ed25519")
    with pytest.raises(ToolFailure, match="became a symbolic link while it was being checked"):
        _attach(ctx, "photo.png", between=swap)
    # A folder on the way swapped for a link: the path the kernel opened is checked again.
    (workspace / "dir").mkdir()
    (workspace / "dir" / "config").write_bytes(PNG)

    def swap_folder():
        (workspace / "dir").rename(workspace / "old")
        (workspace / "dir").symlink_to(user_home / ".ssh")
    with pytest.raises(ToolFailure, match=r"\.ssh, where credentials"):
        _attach(ctx, "dir/config", between=swap_folder)
    assert outbox_names(ctx.channel) == []


def test_a_file_replaced_by_a_fifo_or_emptied_after_the_check_is_refused(ctx, workspace):
    from workers.runtime import ToolFailure
    target = workspace / "photo.png"
    target.write_bytes(PNG)

    def to_fifo():
        target.unlink()
        os.mkfifo(target)
    with pytest.raises(ToolFailure, match="not a regular file"):
        _attach(ctx, "photo.png", between=to_fifo)
    target.unlink()
    target.write_bytes(PNG)
    with pytest.raises(ToolFailure, match="it is empty"):
        _attach(ctx, "photo.png", between=lambda: target.write_bytes(b""))


def test_a_file_that_grows_past_the_ceiling_while_copied_leaves_nothing(ctx, workspace, monkeypatch):
    from workers.runtime import ToolFailure
    target = workspace / "growing.bin"
    target.write_bytes(b"x" * 1024)

    def growing_copy(source_fd, dir_fd, **kw):
        with open(target, "r+b") as fh:     # it grows after the handle was checked
            fh.truncate(MAX_BYTES + 4096)
        return private_copy(source_fd, dir_fd, **kw)
    monkeypatch.setattr(chat_attach, "private_copy", growing_copy)
    with pytest.raises(ToolFailure, match="grew past 25 MiB while it was being copied"):
        _attach(ctx, "growing.bin")
    assert outbox_names(ctx.channel) == []


def test_a_record_that_cannot_be_written_removes_the_copy(ctx, workspace, monkeypatch):
    from workers.runtime import ToolFailure
    (workspace / "p.png").write_bytes(PNG)

    def full_disk(outbox_fd, record):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(chat_attach, "_record", full_disk)
    with pytest.raises(ToolFailure, match="delivery record .* could not be written"):
        _attach(ctx, "p.png")
    assert outbox_names(ctx.channel) == []


# --- properties ------------------------------------------------------------------------------------

COMPONENT = st.text(st.characters(whitelist_categories=("Ll", "Lu", "Nd"), whitelist_characters="._-"),
                    min_size=1, max_size=12).filter(lambda s: s not in (".", ".."))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(entry=st.sampled_from(HOME_SECRETS + BROWSER_PROFILES), upper=st.booleans(),
       rest=st.lists(COMPONENT, max_size=3))
def test_every_credential_location_under_home_is_refused_in_any_case(ctx, user_home, entry, upper, rest):
    rules = ctx.channel.rules()
    path = os.path.join(str(user_home.resolve()), entry.upper() if upper else entry, *rest)
    assert path_refusal(rules, path, path) is not None


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(secret=st.sampled_from(HOST_SECRETS), rest=st.lists(COMPONENT, max_size=3))
def test_every_host_secret_is_refused(ctx, secret, rest):
    path = os.path.join(secret, *rest)
    assert "host secrets" in path_refusal(ctx.channel.rules(), path, path)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(hops=st.lists(st.sampled_from(["ws", "tmp", "home"]), min_size=1, max_size=6),
       secret=st.booleans(), data=st.data())
def test_a_link_chain_is_judged_by_where_it_ends(ctx, workspace, user_home, tmp_path_factory, hops, secret, data):
    base = tmp_path_factory.mktemp("chain")
    folders = {"ws": workspace, "tmp": base, "home": user_home / "pictures"}
    folders["home"].mkdir(exist_ok=True)
    end = user_home / ".ssh" / "config" if secret else folders[data.draw(st.sampled_from(sorted(folders)))] / "ok.png"
    if not secret:
        end.write_bytes(PNG)
    previous = end
    for n, where in enumerate(hops):
        link = folders[where] / f"hop-{base.name}-{n}.png"
        link.symlink_to(previous)
        previous = link
    spec = ChatAttachTool()
    if secret:
        with pytest.raises(RefusedError, match=r"\.ssh"):
            spec.parse({"path": str(previous)}, ctx)
    else:
        spec.parse({"path": str(previous)}, ctx)
