"""Hypothesis strategies shared by the path tests and the fuzz harness: random workspace trees
with symlinks pointing anywhere, and random paths into them."""

import os
import shutil
import stat
import tempfile
from contextlib import contextmanager

from hypothesis import strategies as st

NAMES = st.sampled_from(["a", "b", "c", "link", "..", ".", "x y", "é"])
LINK_TARGETS = st.one_of(
    st.lists(NAMES, min_size=1, max_size=4).map("/".join),
    st.sampled_from(["/", "/etc", "/etc/passwd", "/tmp", "../../..", "..", "../outside", "outside/secret"]),
)
TREES = st.lists(st.tuples(st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=3),
                           st.one_of(st.none(), LINK_TARGETS)), max_size=8)
PATHS = st.lists(NAMES, min_size=1, max_size=6).map("/".join)


def _make_folders(ws: str, parts: list[str]) -> bool:
    """Creates the folders one by one, never through a link (which could point anywhere)."""
    current = ws
    for part in parts:
        current = os.path.join(current, part)
        if os.path.islink(current) or (os.path.lexists(current) and not os.path.isdir(current)):
            return False
        if not os.path.lexists(current):
            os.mkdir(current)
    return True


@contextmanager
def built_tree(spec):
    """A temp dir holding `ws/` (built from spec) and a sibling `outside/secret`."""
    top = tempfile.mkdtemp(prefix="scv-paths-")
    try:
        ws = os.path.join(top, "ws")
        os.makedirs(os.path.join(top, "outside"))
        with open(os.path.join(top, "outside", "secret"), "w") as fh:
            fh.write("secret")
        os.makedirs(ws)
        for parts, target in spec:
            path = os.path.join(ws, *parts)
            if not _make_folders(ws, parts[:-1]) or os.path.lexists(path):
                continue
            if target is None:
                with open(path, "w") as fh:
                    fh.write("inside")
            else:
                os.symlink(target, path)
        yield ws
    finally:
        shutil.rmtree(top, ignore_errors=True)


def check_lexical(path: str) -> None:
    """The property of the lexical validator: a path is refused with a sentence, or split into
    plain components; a trailing '/' (or '/.') keeps those components and names a directory."""
    from scv.core.errors import RefusedError
    from scv.core.paths import names_directory, split_relative
    try:
        parts = split_relative(path)
    except RefusedError as err:
        assert str(err) and "\n" not in str(err)
        return
    assert parts and not path.startswith("/")
    for part in parts:
        assert part not in ("", ".", "..") and "/" not in part and "\x00" not in part
        assert len(part.encode("utf-8")) <= 255
    assert split_relative(path + "/") == parts and names_directory(path + "/")
    assert split_relative(path + "/.") == parts and names_directory(path + "/.")
    assert names_directory(path) is (path.endswith("/") or path.endswith("/."))


def _open_or_error(root: int, path: str, walker: bool, directory: bool):
    from scv.core.safe_open import PathError, open_beneath
    try:
        return open_beneath(root, path.split("/"), os.O_RDONLY | os.O_NONBLOCK, walker=walker, directory=directory)
    except PathError as err:
        return err


def check_trailing_slash_names_a_directory(tree, path: str, walker: bool) -> None:
    """The property: opened as `path/` (directory=True), a path gives a directory inside the
    workspace or an error; where plain `path` opens something that is no directory, the error is
    ENOTDIR's sentence, as open(2) says for `file/`."""
    with built_tree(tree) as ws:
        real_ws = os.path.realpath(ws)
        root = os.open(ws, os.O_PATH | os.O_DIRECTORY)
        try:
            plain = _open_or_error(root, path, walker, directory=False)
            slashed = _open_or_error(root, path, walker, directory=True)
        finally:
            os.close(root)
        opened = [fd for fd in (plain, slashed) if isinstance(fd, int)]
        try:
            if isinstance(slashed, int):
                assert stat.S_ISDIR(os.fstat(slashed).st_mode), path
                real = os.readlink(f"/proc/self/fd/{slashed}")
                assert real == real_ws or real.startswith(real_ws + "/"), (path, real)
            if isinstance(plain, int) and not stat.S_ISDIR(os.fstat(plain).st_mode):
                assert not isinstance(slashed, int) and "is not a directory" in str(slashed), path
            if not isinstance(plain, int):
                assert not isinstance(slashed, int) and str(slashed) == str(plain), path
        finally:
            for fd in opened:
                os.close(fd)


def check_open_stays_inside(tree, path: str, walker: bool) -> None:
    """The property: whatever the tree and path, open_beneath either refuses or returns a
    descriptor of something inside the workspace."""
    from scv.core.safe_open import PathError, open_beneath
    with built_tree(tree) as ws:
        real_ws = os.path.realpath(ws)
        root = os.open(ws, os.O_PATH | os.O_DIRECTORY)
        try:
            fd = open_beneath(root, path.split("/"), os.O_RDONLY | os.O_NONBLOCK, walker=walker)
        except PathError:
            return
        finally:
            os.close(root)
        try:
            real = os.readlink(f"/proc/self/fd/{fd}")
            assert real == real_ws or real.startswith(real_ws + "/"), (path, real)
        finally:
            os.close(fd)
