"""The sandbox's policy and Landlock rules over generated file trees: the rules allow writing
exactly beneath the writable roots (and the devices), reading everything but the hidden
locations, and nothing a kernel's ABI or a file's kind does not allow; hidden locations never
swallow something that must stay visible."""

import posixpath

from hypothesis import given, settings
from hypothesis import strategies as st

from scv.sandbox import rules
from scv.sandbox.policy import (DEVICES, SandboxRequest, build_policy, hidden_inside_writable, label, looks_denied,
                                secret_candidates)


class FakeFs:
    """A tree of absolute paths -> "dir", "file", "link" or "other"; links resolve to themselves."""

    def __init__(self, kinds: dict[str, str]):
        self.kinds = {"/": "dir", **kinds}

    def kind(self, path):
        return self.kinds.get(path)

    def children(self, path):
        prefix = path.rstrip("/") + "/"
        return sorted({p[len(prefix):].split("/")[0] for p in self.kinds if p.startswith(prefix) and p != path})

    def resolve(self, path):
        return path


def _tree(paths: list[tuple[list[str], str]]) -> FakeFs:
    kinds = {"/dev": "dir", **{d: "other" for d in DEVICES}}
    for parts, leaf in paths:
        current = ""
        for index, part in enumerate(parts):
            current = f"{current}/{part}"
            if kinds.get(current, "dir") != "dir":
                break                       # something that is not a folder already has this name
            last = index == len(parts) - 1
            kinds.setdefault(current, leaf if last else "dir")
    return FakeFs(kinds)


NAMES = st.sampled_from(["a", "b", "c", "d"])
TREES = st.lists(st.tuples(st.lists(NAMES, min_size=1, max_size=4), st.sampled_from(["dir", "file", "link", "other"])),
                 min_size=1, max_size=14).map(_tree)


def within(path, root):
    return path == root or root == "/" or path.startswith(root + "/")


def granted(planned, path):
    """Landlock's rule, lexically: a rule grants its rights on its path and everything beneath."""
    rights = 0
    for rule in planned:
        if within(path, rule.path):
            rights |= rule.rights
    return rights


@st.composite
def cases(draw):
    fs = draw(TREES)
    paths = [p for p in fs.kinds if p != "/"]
    dirs = [p for p, k in fs.kinds.items() if k == "dir" and not p.startswith("/dev")]
    workspace = draw(st.sampled_from(dirs))
    tmpdir = draw(st.sampled_from(dirs))
    extras = draw(st.lists(st.sampled_from(dirs), max_size=2))
    keep = draw(st.lists(st.sampled_from(dirs), max_size=1))
    # Candidates may or may not exist, and may hold or sit inside the roots.
    hidden = draw(st.lists(st.one_of(st.sampled_from(paths), NAMES.map(lambda n: f"/{n}/zz")), max_size=4))
    mode = draw(st.sampled_from(["workspace-write", "read-only"]))
    hide_with = draw(st.sampled_from(["mount", "rules"]))
    abi = draw(st.integers(1, 7))
    request = SandboxRequest(mode=mode, network=draw(st.booleans()), writable=extras, hidden=hidden, keep=keep,
                             hide_with=hide_with, landlock_abi=abi)
    return fs, request, workspace, tmpdir


def plan(fs, request, workspace, tmpdir):
    """As the supervisor plans it (with the temporary folder's parent kept visible), plus the
    rule the worker adds for the call's own temporary folder."""
    policy = build_policy(request, workspace, posixpath.dirname(tmpdir), fs)
    planned = rules.landlock_rules(policy.writable, policy.devices, policy.hidden, request.landlock_abi,
                                   request.hide_with, fs)
    return policy, [*planned, rules.Rule(tmpdir, rules.folder_rights(request.landlock_abi))]


@settings(max_examples=400, deadline=None)
@given(cases())
def test_the_rules_allow_writing_exactly_beneath_the_writable_roots(case):
    fs, request, workspace, tmpdir = case
    policy, planned = plan(fs, request, workspace, tmpdir)
    expected_roots = set(request.keep)
    if request.mode == "workspace-write":
        expected_roots |= {workspace, *request.writable}
    assert set(policy.writable) == expected_roots
    write = rules.WRITE_RIGHTS | rules.WRITE_FILE
    roots = [*policy.writable, tmpdir]
    for path in fs.kinds:
        may_write = bool(granted(planned, path) & write)
        assert may_write == (any(within(path, root) for root in roots) or path in policy.devices), path


@settings(max_examples=400, deadline=None)
@given(cases())
def test_reads_reach_everything_but_the_hidden_locations(case):
    fs, request, workspace, tmpdir = case
    policy, planned = plan(fs, request, workspace, tmpdir)
    visible_roots = [*policy.writable, *policy.devices, workspace, posixpath.dirname(tmpdir)]
    # /dev is always read-protected by the rules (raw disks); the secrets too when no mounts hide them.
    unreadable = [*(policy.hidden if request.hide_with == "rules" else []), rules.DEVICE_FOLDER]
    for path, kind in fs.kinds.items():
        if kind == "link":
            continue                        # checked where it leads
        rights = granted(planned, path)
        in_root = any(within(path, r) for r in [*policy.writable, tmpdir]) or path in policy.devices
        if in_root:
            assert rights & rules.READ_FILE, path
        elif any(within(path, h) for h in unreadable):
            assert not rights & (rules.READ_FILE | rules.EXECUTE), path
        elif kind != "dir" or not any(within(h, path) for h in unreadable):
            assert rights & rules.READ_FILE, path      # in mount mode, the mounts hide the secrets
        else:
            assert rights & rules.READ_DIR, path       # on the way to a hidden path: listed only
    # Nothing that must stay visible is hidden, and every existing candidate is covered.
    for hidden in policy.hidden:
        assert not any(within(root, hidden) for root in visible_roots)
    for candidate in request.hidden:
        if fs.kind(candidate) is None:
            continue
        for path in fs.kinds:
            if within(path, candidate) and fs.kind(path) != "link":
                covered = any(within(path, h) for h in policy.hidden)
                seen = any(within(root, path) or within(path, root) for root in visible_roots)
                assert covered or seen, (candidate, path)


@settings(max_examples=300, deadline=None)
@given(cases())
def test_every_rule_fits_the_abi_and_the_kind_of_file(case):
    fs, request, workspace, tmpdir = case
    policy, planned = plan(fs, request, workspace, tmpdir)
    handled = rules.handled_fs(request.landlock_abi)
    for rule in planned:
        assert rule.rights and rule.rights & ~handled == 0
        if fs.kind(rule.path) != "dir":
            assert rule.rights & ~rules.FILE_RIGHTS == 0, rule


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
    assert "no TCP" in label(SandboxRequest(mode="read-only", network=False, network_with="landlock"))
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
    assert posixpath.join("/", "etc") in by_path
