"""Properties of the sandbox's policy and Landlock rules over generated file trees, shared by
tests/test_sandbox_policy.py (short runs) and fuzz/fuzz_sandbox.py (long runs)."""

import posixpath

from hypothesis import strategies as st

from scv.core.sandbox import rules
from scv.core.sandbox.policy import DEVICES, SandboxRequest, build_policy


class FakeFs:
    """A tree of absolute paths -> "dir", "file", "link" or "other"; links resolve to themselves."""

    def __init__(self, kinds: dict[str, str]):
        self.kinds = {"/": "dir", **kinds}

    def kind(self, path):
        return self.kinds.get(path)

    def children(self, path):
        prefix = path.rstrip("/") + "/"
        return sorted({p[len(prefix):].split("/")[0] for p in self.kinds if p.startswith(prefix) and p != path})

    def entries(self, path):
        return [(name, self.kind(posixpath.join(path, name))) for name in self.children(path)]

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


def check_writes(case):
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


def check_reads(case):
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


def check_rule_kinds(case):
    fs, request, workspace, tmpdir = case
    policy, planned = plan(fs, request, workspace, tmpdir)
    handled = rules.handled_fs(request.landlock_abi)
    for rule in planned:
        assert rule.rights and rule.rights & ~handled == 0
        if fs.kind(rule.path) != "dir":
            assert rule.rights & ~rules.FILE_RIGHTS == 0, rule
