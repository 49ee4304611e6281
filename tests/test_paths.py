"""The path validator (lexical, before approval) and open_beneath (at use, against real trees)."""

import errno
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scv.core.errors import RefusedError
from scv.core.paths import is_secret_like, names_directory, split_relative
from scv.core.safe_open import PathError, open_beneath
from tests.path_strategies import (PATHS, TREES, check_lexical, check_open_stays_inside,
                                   check_trailing_slash_names_a_directory)


@given(st.text(max_size=300))
def test_accepted_paths_are_plain_relative_components_and_a_trailing_slash_names_a_directory(path):
    check_lexical(path)


@pytest.mark.parametrize("path, directory", [
    ("a", False), ("a/b", False), ("a/", True), ("a/b//", True), ("a/.", True), ("./a", False), ("a/.b", False),
])
def test_names_directory_is_the_posix_trailing_slash_rule(path, directory):
    assert names_directory(path) is directory


@pytest.mark.parametrize("path, reason", [
    ("", "empty"), ("/etc/passwd", "absolute"), ("../x", "'..'"), ("a/../../x", "'..'"),
    ("a\x00b", "NUL"), ("~/x", "'~'"), ("a/\udcff", "UTF-8"), ("x" * 256, "over 255"), (".", "workspace itself"),
    ("a/" * 2100, "over the 4096-byte"),
])
def test_refusals_say_why(path, reason):
    with pytest.raises(RefusedError, match=reason if reason[0] != "'" else None) as err:
        split_relative(path)
    assert reason.strip("'") in str(err.value) or reason in str(err.value)


@pytest.mark.parametrize("path, secret", [
    (".env", True), ("config/.env.production", True), ("keys/server.pem", True), ("a/id_ed25519", True),
    (".ssh/config", True), ("my_credentials.json", True), ("src/main.py", False), ("README.md", False),
    ("docs/keyboard.md", False), ("private_key.txt", True), ("x.kdbx", True),
])
def test_secret_like_names(path, secret):
    assert is_secret_like(split_relative(path)) is secret


@pytest.mark.parametrize("walker", [False, True], ids=["openat2", "walker"])
@settings(max_examples=150, deadline=None)
@given(tree=TREES, path=PATHS)
def test_open_beneath_never_lands_outside(walker, tree, path):
    check_open_stays_inside(tree, path, walker)


@pytest.mark.parametrize("walker", [False, True], ids=["openat2", "walker"])
@settings(max_examples=150, deadline=None)
@given(tree=TREES, path=PATHS)
def test_a_trailing_slash_opens_only_a_directory(walker, tree, path):
    check_trailing_slash_names_a_directory(tree, path, walker)


@pytest.mark.parametrize("walker", [False, True], ids=["openat2", "walker"])
def test_a_file_with_a_trailing_slash_is_not_a_directory(tmp_path, walker):
    (tmp_path / "ok.txt").write_text("ok")
    (tmp_path / "sub").mkdir()
    (tmp_path / "link").symlink_to("ok.txt")
    root = os.open(tmp_path, os.O_PATH | os.O_DIRECTORY)
    try:
        for name in ("ok.txt", "link"):
            with pytest.raises(PathError, match=f"^{name}/ is not a directory, yet a path ending in '/' must name one"):
                open_beneath(root, [name], os.O_RDONLY, walker=walker, directory=True)
        os.close(open_beneath(root, ["sub"], os.O_RDONLY, walker=walker, directory=True))
        with pytest.raises(PathError, match="does not exist"):
            open_beneath(root, ["missing"], os.O_RDONLY, walker=walker, directory=True)
    finally:
        os.close(root)


@pytest.mark.parametrize("walker", [False, True], ids=["openat2", "walker"])
def test_known_escapes_are_refused(tmp_path, walker):
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    (tmp_path / "secret").write_text("s")
    (ws / "abs").symlink_to("/etc/passwd")
    (ws / "up").symlink_to("../secret")
    (ws / "sub" / "upup").symlink_to("../../secret")
    (ws / "inner").symlink_to("sub")
    (ws / "sub" / "f").write_text("ok")
    # A long chain of in-workspace links that finally leaves (realpath's PATH_MAX trap).
    (ws / "chain0").symlink_to("up")
    for i in range(1, 30):
        (ws / f"chain{i}").symlink_to(f"chain{i - 1}")
    root = os.open(ws, os.O_PATH | os.O_DIRECTORY)
    try:
        for name in ["abs", "up", "sub/upup"]:
            with pytest.raises(PathError, match="outside the workspace"):
                open_beneath(root, name.split("/"), os.O_RDONLY, walker=walker)
        # The kernel may count the long chain against its link limit before it sees the escape.
        with pytest.raises(PathError, match="outside the workspace|too many symbolic links"):
            open_beneath(root, ["chain29"], os.O_RDONLY, walker=walker)
        fd = open_beneath(root, ["inner", "f"], os.O_RDONLY, walker=walker)
        assert os.read(fd, 10) == b"ok"
        os.close(fd)
    finally:
        os.close(root)


def test_a_link_loop_is_refused(tmp_path):
    (tmp_path / "a").symlink_to("b")
    (tmp_path / "b").symlink_to("a")
    root = os.open(tmp_path, os.O_PATH | os.O_DIRECTORY)
    try:
        for walker in (False, True):
            with pytest.raises(PathError, match="too many symbolic links"):
                open_beneath(root, ["a"], os.O_RDONLY, walker=walker)
    finally:
        os.close(root)


@pytest.mark.parametrize("walker", [False, True], ids=["openat2", "walker"])
def test_open_exact_follows_no_link_at_all(tmp_path, walker):
    from scv.core.safe_open import open_exact
    root = tmp_path / "root"
    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "b" / "f").write_text("inside")
    (root / "link-dir").symlink_to(root / "a")
    (root / "a" / "link-file").symlink_to(root / "a" / "b" / "f")
    fd_root = os.open(root, os.O_PATH | os.O_DIRECTORY)
    try:
        fd = open_exact(fd_root, ["a", "b", "f"], os.O_RDONLY, walker=walker)
        assert os.read(fd, 10) == b"inside"
        os.close(fd)
        for parts, code in ((["link-dir", "b", "f"], errno.ELOOP), (["a", "link-file"], errno.ELOOP),
                            (["a", "..", "a", "b", "f"], errno.EXDEV), (["a", "b", "f", "g"], errno.ENOTDIR),
                            (["a", "missing"], errno.ENOENT)):
            with pytest.raises(OSError) as caught:
                open_exact(fd_root, parts, os.O_RDONLY, walker=walker)
            assert caught.value.errno == code, parts
    finally:
        os.close(fd_root)
