"""`scv agents import grok` through real `python -m scv` processes (a fake user's ~/.grok, $GROK_HOME
or --from), and the text-level merge by top-level table behind it: generated pairs of documents
always merge to exactly the dict merge {**scv, **user}, and a merge that would not is refused."""

import json
import stat
import tomllib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scv.agents import toml_merge
from scv.agents.toml_merge import MergeRefused, merge, same
from tests.conftest import run_scv, scv_env
from tests.delegation_fakes import fake_agent
from tests.toml_render import DOCUMENTS, render

GROK_KEY = "xai-import-secret-9999"
USER_CONFIG = f'''# my own Grok setup
[models]
default = "grok-5"

[models.main]
id = "grok-5"
api_key = "{GROK_KEY}"

[models.fast]
model = "grok-5-fast"
env_key = "XAI_API_KEY"

[ui]
theme = "dark"
'''
SCV_COPY = '''[models]
default = "grok-old"

# Grok's own state, written into SCV's copy
[marketplace]
installed = ["a", "b"]
notes = """
[models]
default = "not a header"
"""

[[marketplace.sources]]
url = "https://plugins.example"
'''


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def grok_source(user_home) -> Path:
    source = user_home / ".grok"
    source.mkdir(parents=True)
    (source / "config.toml").write_text(USER_CONFIG)
    (source / "auth.json").write_text(json.dumps({"access_token": "grok-token-secret-5555"}))
    return source


def private_config(scv_home: Path) -> Path:
    return scv_home / "agents" / "grok" / ".grok" / "config.toml"


def test_import_grok_merges_by_top_level_table_and_prints_no_key(grok_source, tmp_path, scv_home):
    target = private_config(scv_home)
    target.parent.mkdir(parents=True)
    target.write_text(SCV_COPY)
    proc = run_scv("agents", "import", "grok")         # ~/.grok by default
    assert proc.returncode == 0, proc.stderr
    merged = tomllib.loads(target.read_text())
    assert same(merged, {**tomllib.loads(SCV_COPY), **tomllib.loads(USER_CONFIG)})
    assert merged["models"]["default"] == "grok-5" and merged["marketplace"]["sources"] == [
        {"url": "https://plugins.example"}]
    assert target.read_text().startswith(USER_CONFIG)            # the user's text is copied as written
    assert mode(target) == 0o600 and mode(target.parent) == 0o700 and mode(target.parent.parent) == 0o700
    assert sorted(p.name for p in target.parent.iterdir()) == ["config.toml"]    # no auth.json, no temporary
    for line in ("kept from SCV's copy: marketplace", 'default model: "grok-5"',
                 'profile "main": model "grok-5", API key in config (default)',
                 'profile "fast": model "grok-5-fast", key from $XAI_API_KEY (env_key)',
                 "auth.json (a grok login sign-in) is never copied"):
        assert line in proc.stdout
    assert "XAI_API_KEY (env_key): SCV removes it from delegated agents" in proc.stderr
    record_path = scv_home / "state" / "imports" / "grok.json"
    record = json.loads(record_path.read_text())
    assert mode(record_path) == 0o600 and len(record["digest"]) == 64 and record["source"] == str(grok_source)
    assert GROK_KEY not in record_path.read_text() and "grok-5" not in record_path.read_text()
    fake_agent(tmp_path, "grok", "exit 0\n")
    status = run_scv("agents", "status")
    assert 'grok   signed in (API key in config, model "grok-5")' in status.stdout
    assert f"imported from {grok_source}: up to date" in status.stdout
    (grok_source / "config.toml").write_text(USER_CONFIG.replace("dark", "light"))
    status_after = run_scv("agents", "status", "--json")
    entry = {e["agent"]: e for e in json.loads(status_after.stdout)["agents"]}["grok"]
    assert entry["import"] == {"source": str(grok_source), "up_to_date": False,
                               "detail": "the source has changed since the import; run scv agents import grok "
                                         f"--from {grok_source} again"}
    for output in (proc.stdout, proc.stderr, status.stdout, status_after.stdout):
        assert GROK_KEY not in output and "grok-token-secret-5555" not in output


def test_import_grok_from_grok_home_or_from_into_a_fresh_home(user_home, tmp_path, scv_home):
    source = tmp_path / "elsewhere"
    source.mkdir()
    (source / "config.toml").write_text('[models]\ndefault = "m"\n[models.m]\napi_key = "k-1"')   # no final newline
    proc = run_scv("agents", "import", "grok", env=scv_env(GROK_HOME=str(source), SCV_HOME=str(scv_home)))
    assert proc.returncode == 0, proc.stderr
    assert private_config(scv_home).read_text() == (source / "config.toml").read_text()
    assert "kept from" not in proc.stdout and "auth.json" not in proc.stdout
    assert 'profile "m": model "m", API key in config (default)' in proc.stdout
    other = tmp_path / "other"
    other.mkdir()
    (other / "config.toml").write_text("[ui]\ntheme = 'x'\n")
    proc = run_scv("agents", "import", "grok", "--from", str(other))
    assert proc.returncode == 0, proc.stderr
    # the first import's [models] is now a table only SCV's copy has: kept
    assert tomllib.loads(private_config(scv_home).read_text()) == {"ui": {"theme": "x"}, "models": {
        "default": "m", "m": {"api_key": "k-1"}}}
    assert "kept from SCV's copy: models" in proc.stdout
    private_config(scv_home).unlink()
    proc = run_scv("agents", "import", "grok", "--from", str(other))
    assert private_config(scv_home).read_text() == "[ui]\ntheme = 'x'\n"
    assert "no default model" in proc.stdout and "profile" not in proc.stdout


@pytest.mark.parametrize("broken,sentence,code", [
    ("user", "config.toml is not valid TOML", 1),
    ("copy", "remove it to import your config as it is", 1),
    ("missing", "has no config.toml to import", 2),
    ("nowhere", "is not a folder", 2),
])
def test_import_grok_validates_before_writing(grok_source, scv_home, broken, sentence, code):
    target = private_config(scv_home)
    target.parent.mkdir(parents=True)
    target.write_text(SCV_COPY)
    source = grok_source
    if broken == "user":
        (source / "config.toml").write_text(USER_CONFIG + "[models]\n")      # a table defined twice
    elif broken == "copy":
        target.write_text("[marketplace\n")
    elif broken == "missing":
        (source / "config.toml").unlink()
    else:
        source = source / "absent"
    before = target.read_text()
    proc = run_scv("agents", "import", "grok", "--from", str(source))
    assert proc.returncode == code and sentence in proc.stderr and proc.stderr.count("\n") == 1
    assert target.read_text() == before and not (scv_home / "state" / "imports" / "grok.json").exists()
    assert GROK_KEY not in proc.stderr + proc.stdout


def test_import_other_agents_refuse_grok_options(user_home):
    proc = run_scv("agents", "import", "grok", "--from-scv-provider")
    assert proc.returncode == 2 and "--from-scv-provider is for scv agents import pi only" in proc.stderr


# --- the merge itself ---

@settings(max_examples=300, deadline=None)
@given(DOCUMENTS, DOCUMENTS, st.randoms(use_true_random=False))
def test_generated_documents_merge_to_exactly_the_dict_merge(user_doc, scv_doc, rng):
    user_text, scv_text = render(user_doc, rng), render(scv_doc, rng)
    assert same(tomllib.loads(user_text), user_doc) and same(tomllib.loads(scv_text), scv_doc)   # the renderer
    text, merged, kept = merge(user_text, scv_text)
    assert same(tomllib.loads(text), {**scv_doc, **user_doc}) and same(merged, {**scv_doc, **user_doc})
    assert sorted(kept) == sorted(k for k in scv_doc if k not in user_doc)


@settings(max_examples=150, deadline=None)
@given(DOCUMENTS, DOCUMENTS, st.randoms(use_true_random=False), st.integers(0, 20))
def test_a_merge_that_loses_or_repeats_a_unit_is_refused(user_doc, scv_doc, rng, which):
    """The validation is what stands between a splitting mistake and a wrong file: a splitter that
    drops or repeats one unit must be refused, never written."""
    user_text, scv_text = render(user_doc, rng), render(scv_doc, rng)
    real = toml_merge.split_units

    def faulty(text):
        units = real(text)
        keyed = [u for u in units if u.key is not None]
        if text == user_text and keyed:
            victim = keyed[which % len(keyed)]
            if which % 2:
                units.remove(victim)
            else:
                units.append(victim)
        return units

    toml_merge.split_units = faulty
    try:
        try:
            text, merged, _ = merge(user_text, scv_text)
        except MergeRefused:
            return
    finally:
        toml_merge.split_units = real
    assert same(tomllib.loads(text), {**scv_doc, **user_doc})       # only a harmless change gets through


def test_lines_that_look_like_headers_inside_strings_and_arrays_stay_put():
    user_text = '[models]\ndefault = "u"\n'
    scv_text = ('x = [\n  [1, 2],\n  # [models]\n  [3],\n]\nnote = """\n[models]\ny = 1\n"""\n'
                "[\"a.b\".\"[models]\"]\nv = '''\n[[models]]\n'''\n[models]\ndefault = \"s\"\n")
    text, merged, kept = merge(user_text, scv_text)
    assert kept == ["x", "note", "a.b"]
    assert merged == {"models": {"default": "u"}, "x": [[1, 2], [3]], "note": "[models]\ny = 1\n",
                      "a.b": {"[models]": {"v": "[[models]]\n"}}}
    assert 'default = "s"' not in text and user_text in text
