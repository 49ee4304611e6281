"""`[web]` configuration: defaults, validation sentences, user-only keys, and which tools it
enables."""

import pytest

from scv.config.load import load_config
from scv.core.errors import ConfigError
from scv.tools.base import ToolContext
from scv.tools.registry import build_registry


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_defaults(scv_home, workspace):
    web = load_config(workspace).web
    assert (web.search, web.max_search_results, web.fetch_max_bytes, web.max_redirects) == ("none", 8, 2 << 20, 5)
    assert (web.fetch_timeout_seconds, web.allow_private_addresses, web.auto_approve_domains) == (30, False, [])
    assert web.brave_api_key_env == "BRAVE_API_KEY"


def test_user_config_sets_web_keys(scv_home, workspace):
    write(scv_home / "config.toml", '[web]\nsearch = "searxng"\nsearxng_url = "http://127.0.0.1:8888"\n'
                                    'auto_approve_domains = ["docs.rs", "docs.python.org"]\nmax_redirects = 2\n')
    web = load_config(workspace).web
    assert web.searxng_url == "http://127.0.0.1:8888" and web.max_redirects == 2
    assert web.auto_approve_domains == ["docs.rs", "docs.python.org"]


@pytest.mark.parametrize("key, value", [("allow_private_addresses", "true"), ("auto_approve_domains", '["evil.example"]'),
                                        ("search", '"brave"'), ("fetch_max_bytes", "1024")])
def test_a_project_config_cannot_set_web_keys(scv_home, workspace, key, value):
    write(workspace / ".scv" / "config.toml", f"[web]\n{key} = {value}\n")
    with pytest.raises(ConfigError, match=f"web.{key} may not be set by a project config"):
        load_config(workspace)


@pytest.mark.parametrize("body, words", [
    ('search = "searxng"', "needs searxng_url"),
    ('search = "searxng"\nsearxng_url = "ftp://x"', "searxng_url is not usable"),
    ('search = "google"', "key web.search"),
    ('auto_approve_domains = ["https://docs.rs"]', "without scheme"),
    ('auto_approve_domains = ["Docs.rs"]', "lower-case host name"),
    ('auto_approve_domains = ["docs..rs"]', "not a host name"),
    ('brave_api_key_env = "MY-KEY"', "not a variable name"),
    ("fetch_max_bytes = 10", "web.fetch_max_bytes"),
    ("max_search_results = 0", "web.max_search_results"),
    ("fetch_timeout = 3", "unknown key web.fetch_timeout"),
])
def test_bad_web_values_name_the_file_and_key(scv_home, workspace, body, words):
    write(scv_home / "config.toml", f"[web]\n{body}\n")
    with pytest.raises(ConfigError) as caught:
        load_config(workspace)
    assert "config.toml" in str(caught.value) and words in str(caught.value)


@pytest.mark.parametrize("search, offered", [("none", False), ("provider", False), ("searxng", True),
                                             ("brave", True)])
def test_web_search_is_offered_only_for_searxng_and_brave(scv_home, workspace, search, offered):
    extra = '\nsearxng_url = "http://127.0.0.1:8888"' if search == "searxng" else ""
    write(scv_home / "config.toml", f'[web]\nsearch = "{search}"{extra}\n')
    ctx = ToolContext(workspace=workspace, config=load_config(workspace))
    names = build_registry(ctx).names()
    assert "web_fetch" in names
    assert ("web_search" in names) is offered
