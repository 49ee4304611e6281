"""The Landlock rules as the worker applies them, in a child process that restricts itself: the
plan was made a moment earlier, and what it named may have changed since. A rule is a grant, so
one whose path is gone is left out rather than refusing the call (a busy /tmp loses a sibling of
a hidden folder between the plan and the call), and one whose path now passes through a link
grants nothing where the link points."""

import subprocess
import sys

from tests.conftest import ROOT, scv_env
from tests.sandbox_fakes import needs_landlock

pytestmark = needs_landlock

APPLY = """
import os, sys
from scv.core.sandbox import rules as ll
from workers import sandbox_linux as box

kept, secret, *planned = sys.argv[1:]
abi, _ = box.landlock_abi()
ruleset = box.build_ruleset([ll.Rule("/", ll.READ_DIR), ll.Rule(kept, ll.READ),
                             *(ll.Rule(path, ll.READ) for path in planned)], abi, True)
box._check(box._prctl(box.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
box._check(box._syscall(box.SYS_LANDLOCK_RESTRICT_SELF, ruleset, box.ctypes.c_uint32(0)), "restrict_self")
for path in (os.path.join(kept, "f"), os.path.join(secret, "key")):
    try:
        print(path, open(path).read().strip())
    except OSError as err:
        print(path, err.strerror)
"""


def _apply(kept, secret, *planned) -> list[str]:
    proc = subprocess.run([sys.executable, "-c", APPLY, str(kept), str(secret), *map(str, planned)], cwd=ROOT,
                          env=scv_env(), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.splitlines()


def _tree(tmp_path):
    kept, secret = tmp_path / "kept", tmp_path / "secret"
    for folder in (kept, secret):
        folder.mkdir()
    (kept / "f").write_text("readable")
    (secret / "key").write_text("hunter2")
    return kept, secret


def test_a_rule_whose_path_is_gone_is_left_out_and_the_rest_apply(tmp_path):
    kept, secret = _tree(tmp_path)
    assert _apply(kept, secret, tmp_path / "gone") == [f"{kept / 'f'} readable", f"{secret / 'key'} Permission denied"]


def test_a_rule_whose_path_now_passes_through_a_link_grants_nothing_there(tmp_path):
    kept, secret = _tree(tmp_path)
    # The plan named parent/secret; since then `parent` became a link to the folder the secret is in.
    (tmp_path / "parent").symlink_to(tmp_path)
    assert _apply(kept, secret, tmp_path / "parent" / "secret") == [f"{kept / 'f'} readable",
                                                                      f"{secret / 'key'} Permission denied"]
