"""`scv agents login dsh` keeps the rest of DeepSeek Harness's `.credentials.yaml`: only the
`refs.DEEPSEEK_API_KEY` line is replaced or added (real `python -m scv` processes), and a file of a
shape that cannot be edited safely is refused and left as it was. No key ever appears in output."""

import stat
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scv.agents.dsh_key import _Unsafe, with_key
from scv.agents.signin import dsh_key_stored
from tests.conftest import run_scv
from tests.delegation_fakes import fake_agent

KEY = "sk-dsh-new-secret-4242"
OLD_KEY = "sk-dsh-old-secret-1313"


@pytest.fixture
def credentials(user_home, scv_home):
    path = scv_home / "agents" / "dsh" / ".dsh" / ".credentials.yaml"
    path.parent.mkdir(parents=True)
    return path


def login(key: str = KEY):
    proc = run_scv("agents", "login", "dsh", input=key + "\n")
    assert KEY not in proc.stdout + proc.stderr and OLD_KEY not in proc.stdout + proc.stderr
    return proc


KEPT = """# DeepSeek Harness credentials
version: 2
note: |
  refs:
    DEEPSEEK_API_KEY: not-this-one
refs:
    OPENROUTER_API_KEY: "or-keep-me"   # another provider
    DEEPSEEK_API_KEY: '{old}'
    GITHUB_TOKEN: gh-keep-me
profiles:
  default:
    model: deepseek-chat
"""


@pytest.mark.parametrize("before,after", [
    (KEPT.format(old=OLD_KEY), KEPT.format(old=OLD_KEY).replace(f"DEEPSEEK_API_KEY: '{OLD_KEY}'",
                                                               f'DEEPSEEK_API_KEY: "{KEY}"')),
    ("refs:\n    A: 1\n    B: 'two'\n\nother: x\n", f'refs:\n    A: 1\n    B: \'two\'\n    DEEPSEEK_API_KEY: "{KEY}"\n'
                                                      "\nother: x\n"),
    ("refs: {}  # none yet\nother: x\n", f'refs:\n  DEEPSEEK_API_KEY: "{KEY}"\nother: x\n'),
    ("refs:\nother: x", f'refs:\n  DEEPSEEK_API_KEY: "{KEY}"\nother: x'),
    ("version: 2", f'version: 2\nrefs:\n  DEEPSEEK_API_KEY: "{KEY}"\n'),
    ("", f'refs:\n  DEEPSEEK_API_KEY: "{KEY}"\n'),
])
def test_login_dsh_replaces_or_adds_only_its_entry(credentials, tmp_path, before, after):
    credentials.write_text(before)
    credentials.chmod(0o644)
    proc = login()
    assert proc.returncode == 0, proc.stderr
    assert credentials.read_text() == after
    assert stat.S_IMODE(credentials.stat().st_mode) == 0o600
    assert sorted(p.name for p in credentials.parent.iterdir()) == [".credentials.yaml"]    # no temporary left
    fake_agent(tmp_path, "dsh", "exit 0\n")
    status = run_scv("agents", "status")
    assert "dsh    signed in (API key stored)" in status.stdout and KEY not in status.stdout


@pytest.mark.parametrize("shape", [
    "refs: {OTHER: x}\n",                                        # a flow mapping with entries
    "refs:\n  OTHER:\n    nested: x\n",                          # nested under refs
    "refs:\n  A: 1\n   B: 2\n",                                  # indented differently
    "refs:\n\tA: 1\n",                                           # a tab
    "refs:\n  A: 1\nrefs:\n  B: 2\n",                            # refs twice
    "---\nrefs:\n  A: 1\n",                                      # a document marker
    'note: "starts here\nrefs: fake"\n',                         # a quoted value over two lines
    "refs:\n  - A\n",                                            # a sequence
    "refs:\n  A: |\n    text\n",                                 # a block scalar under refs
    f"refs:\n  DEEPSEEK_API_KEY: {OLD_KEY}\n  DEEPSEEK_API_KEY: b\n",   # its entry twice
    "  refs:\n    A: 1\n",                                       # an indented top level
])
def test_login_dsh_refuses_a_shape_it_cannot_edit_and_writes_nothing(credentials, shape):
    credentials.write_text(shape)
    proc = login()
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1, proc.stderr
    assert "has a shape SCV cannot edit safely" in proc.stderr and "scv agents logout dsh" in proc.stderr
    assert credentials.read_text() == shape
    assert sorted(p.name for p in credentials.parent.iterdir()) == [".credentials.yaml"]


def test_logout_then_login_recovers_from_a_refused_file(credentials):
    credentials.write_text("refs: {OTHER: x}\n")
    assert login().returncode == 1
    assert run_scv("agents", "logout", "dsh").returncode == 0 and not credentials.exists()
    assert login().returncode == 0 and KEY in credentials.read_text()


# Entries of the simple shape: top-level `name: value` lines, some with indented children.
NAMES = st.sampled_from(["refs", "version", "profiles", "DEEPSEEK_API_KEY", "A", "B"])
VALUES = st.sampled_from(["", "1", "x y", "'q'", '"d"', "{}", "[a, b]", "# c", "|", "&a"])
LINES = st.lists(st.tuples(st.sampled_from(["", "  ", "    "]), NAMES, VALUES), max_size=8)


def kept_the_rest(original: str, edited: str) -> bool:
    """`edited` is `original` with one entry line written: an old DEEPSEEK_API_KEY line replaced, or
    a line added (`refs: {}` becoming `refs:`), or a refs block appended at the end."""
    ours = f'DEEPSEEK_API_KEY: "{KEY}"'
    if edited.startswith(original) and edited[len(original):].lstrip("\n") == f"refs:\n  {ours}\n":
        return True
    lines = edited.split("\n")
    if [line.strip() for line in lines].count(ours) != 1:
        return False
    rest = [line for line in lines if line.strip() != ours]
    before = ["refs:" if line.startswith("refs: {}") else line for line in original.split("\n")]
    replaced = [i for i, line in enumerate(before)
                if line.startswith(" ") and line.strip().startswith("DEEPSEEK_API_KEY")]
    return rest == before or any(rest == before[:i] + before[i + 1:] for i in replaced)


@settings(max_examples=300, deadline=None)
@given(LINES, st.booleans())
def test_an_edit_keeps_every_other_line_or_refuses(entries, final_newline):
    text = "\n".join(f"{indent}{name}: {value}".rstrip() for indent, name, value in entries)
    text += "\n" if final_newline and text else ""
    try:
        edited = with_key(text, KEY)
    except _Unsafe:
        return
    assert kept_the_rest(text, edited)
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / ".credentials.yaml").write_text(edited)
        assert dsh_key_stored(Path(folder))
