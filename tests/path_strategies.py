"""Hypothesis strategies shared by the path tests and the fuzz harness: random workspace trees
with symlinks pointing anywhere, and random paths into them."""

import os
import shutil
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


def check_open_stays_inside(tree, path: str, walker: bool) -> None:
    """The property: whatever the tree and path, open_beneath either refuses or returns a
    descriptor of something inside the workspace."""
    from scv.safe_open import PathError, open_beneath
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
