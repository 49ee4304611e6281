"""Longer runs of the path validator and open_beneath properties (see tests/test_paths.py)."""

from hypothesis import given
from hypothesis import strategies as st

from tests.path_strategies import (PATHS, TREES, check_lexical, check_open_stays_inside,
                                   check_trailing_slash_names_a_directory)


@given(st.text(max_size=600))
def lexical_validator_accepts_only_plain_components(path):
    check_lexical(path)


@given(tree=TREES, path=PATHS, walker=st.booleans())
def open_beneath_stays_inside(tree, path, walker):
    check_open_stays_inside(tree, path, walker)


@given(tree=TREES, path=PATHS, walker=st.booleans())
def trailing_slash_opens_only_a_directory(tree, path, walker):
    check_trailing_slash_names_a_directory(tree, path, walker)


HARNESSES = [lexical_validator_accepts_only_plain_components, open_beneath_stays_inside,
             trailing_slash_opens_only_a_directory]
