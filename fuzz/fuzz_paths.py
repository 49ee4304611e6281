"""Longer runs of the path validator and open_beneath properties (see tests/test_paths.py)."""

import os

from hypothesis import given
from hypothesis import strategies as st

from scv.errors import RefusedError
from scv.paths import split_relative
from scv.safe_open import PathError, open_beneath
from tests.path_strategies import PATHS, TREES, built_tree


@given(st.text(max_size=600))
def lexical_validator_accepts_only_plain_components(path):
    try:
        parts = split_relative(path)
    except RefusedError:
        return
    assert parts and all(p not in ("", ".", "..") and "/" not in p and "\x00" not in p for p in parts)


@given(tree=TREES, path=PATHS, walker=st.booleans())
def open_beneath_stays_inside(tree, path, walker):
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


HARNESSES = [lexical_validator_accepts_only_plain_components, open_beneath_stays_inside]
