"""The sandbox's policy and Landlock rules over generated file trees: the rules allow writing
exactly beneath the writable roots (and the devices), reading everything but the hidden
locations, and nothing a kernel's ABI or a file's kind does not allow; hidden locations never
swallow something that must stay visible."""

from hypothesis import given, settings

from scv.core.sandbox import rules
from scv.core.sandbox.policy import SandboxRequest, build_policy, hidden_inside_writable, label, looks_denied, secret_candidates
from tests.sandbox_properties import FakeFs, cases, check_reads, check_rule_kinds, check_writes


@settings(max_examples=400, deadline=None)
@given(cases())
def test_the_rules_allow_writing_exactly_beneath_the_writable_roots(case):
    check_writes(case)


@settings(max_examples=400, deadline=None)
@given(cases())
def test_reads_reach_everything_but_the_hidden_locations(case):
    check_reads(case)


@settings(max_examples=300, deadline=None)
@given(cases())
def test_every_rule_fits_the_abi_and_the_kind_of_file(case):
    check_rule_kinds(case)


def test_hidden_inside_a_writable_root_is_reported_for_rules_only_hiding():
    fs = FakeFs({"/home": "dir", "/home/u": "dir", "/home/u/.ssh": "dir", "/home/u/.ssh/id": "file",
                 "/tmp": "dir", "/tmp/t": "dir"})
    request = SandboxRequest(mode="workspace-write", network=False, hidden=["/home/u/.ssh"])
    policy = build_policy(request, "/home/u", "/tmp", fs)
    assert policy.hidden == ("/home/u/.ssh",)
    assert hidden_inside_writable(policy) == [("/home/u", "/home/u/.ssh")]


def test_a_hidden_folder_holding_an_agent_home_hides_everything_else_in_it():
    fs = FakeFs({"/s": "dir", "/s/config.toml": "file", "/s/state": "dir", "/s/agents": "dir",
                 "/s/agents/codex": "dir", "/s/agents/claude": "dir", "/s/agents/link": "link",
                 "/w": "dir", "/t": "dir"})
    request = SandboxRequest(mode="read-only", network=False, hidden=["/s"], keep=["/s/agents/codex"])
    policy = build_policy(request, "/w", "/t", fs)
    assert policy.hidden == ("/s/agents/claude", "/s/config.toml", "/s/state")
    assert policy.writable == ("/s/agents/codex",)


def test_lower_abis_drop_features_one_by_one():
    assert [name for name, _ in rules.dropped(1)] == ["refer", "truncate", "network", "ioctl_dev", "scoping"]
    assert [name for name, _ in rules.dropped(4)] == ["ioctl_dev", "scoping"]
    assert rules.dropped(6) == []
    assert rules.handled_net(3, network=False) == 0 and rules.handled_net(4, network=True) == 0
    assert rules.handled_net(4, network=False) == rules.NET_BIND_TCP | rules.NET_CONNECT_TCP
    assert rules.scoped(5) == 0 and rules.scoped(6) == rules.SCOPE_SIGNAL | rules.SCOPE_ABSTRACT_UNIX_SOCKET


def test_secret_candidates_cover_the_homes_scv_home_and_host_secrets():
    found = secret_candidates(["/home/u", "/root"], "/data/scv", 1000, {"SSH_AUTH_SOCK": "/tmp/ssh-x/agent.1"})
    for path in ("/home/u/.ssh", "/root/.aws", "/home/u/.config/gh", "/data/scv", "/etc/shadow", "/run/user/1000",
                 "/tmp/ssh-x/agent.1", "/run/docker.sock"):
        assert path in found
    assert "/root" not in found                       # the account's own home: only its secrets are hidden
    assert "/root" in secret_candidates(["/home/u"], "/home/u/.scv", 1000, {})


def test_the_label_and_the_denial_hint():
    request = SandboxRequest(mode="workspace-write", network=False, network_with="namespace")
    assert label(request) == "sandbox: workspace-write, no network"
    assert label(SandboxRequest(mode="read-only", network=True)) == "sandbox: read-only, network allowed"
    assert "no network (Landlock and seccomp" in label(SandboxRequest(mode="read-only", network=False, network_with="landlock"))
    assert looks_denied("touch: cannot touch '/x': Permission denied", network=True)
    assert looks_denied("curl: (7) Network is unreachable", network=False)
    assert not looks_denied("curl: (7) Network is unreachable", network=True)
    assert not looks_denied("all good", network=False)


def test_rules_only_hiding_lists_the_way_and_grants_the_siblings():
    fs = FakeFs({"/etc": "dir", "/etc/shadow": "file", "/etc/passwd": "file", "/etc/ssl": "dir",
                 "/etc/os-release": "link", "/usr": "dir", "/dev": "dir", "/dev/null": "other", "/dev/sda": "other"})
    planned = rules.landlock_rules([], ["/dev/null"], ["/etc/shadow"], 7, "rules", fs)
    by_path = {rule.path: rule.rights for rule in planned}
    assert by_path["/"] == rules.READ_DIR and by_path["/etc"] == rules.READ_DIR
    assert by_path["/dev"] == rules.READ_DIR and by_path["/dev/null"] & rules.WRITE_FILE
    assert "/dev/sda" not in by_path
    assert by_path["/usr"] == rules.READ and by_path["/etc/ssl"] == rules.READ
    assert by_path["/etc/passwd"] == rules.READ_FILE | rules.EXECUTE
    assert "/etc/shadow" not in by_path and "/etc/os-release" not in by_path
