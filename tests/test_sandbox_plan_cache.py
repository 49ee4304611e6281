"""A sandbox plan is reused only while what it was read from is unchanged: a secret made after
the plan, a writable folder swapped for a link, or a folder that changed too recently to trust
its times all make a new plan. The last test runs real sandboxed `bash` calls around such a
change."""

import os
import time

import pytest

from scv.core.sandbox import rules
from scv.core.sandbox.policy import SandboxRequest, build_policy
from scv.sandbox import choose
from scv.sandbox.plan_cache import RACY_SECONDS, PlanCache, _read
from tests.sandbox_fakes import bash, needs_landlock, plant_secrets, sandbox_config


def later() -> float:
    """A planning clock past every folder's times: no stamp is racy."""
    return time.time() + 10 * RACY_SECONDS


class Planner:
    """Plans a request's policy through a cache, counting the plans made."""

    def __init__(self, cache: PlanCache, request: SandboxRequest, workspace, tmp_root):
        self.cache, self.request, self.workspace, self.tmp_root = cache, request, str(workspace), str(tmp_root)
        self.made = 0

    def __call__(self):
        return self.cache.get("key", self._make)

    def _make(self, fs):
        self.made += 1
        policy = build_policy(self.request, self.workspace, self.tmp_root, fs)
        return policy, rules.landlock_rules(policy.writable, policy.devices, policy.hidden, 7, "rules", fs)


@pytest.fixture
def tree(tmp_path):
    home, ws, tmp = tmp_path / "home", tmp_path / "ws", tmp_path / "tmp"
    for folder in (home, ws / "build", tmp):
        folder.mkdir(parents=True)
    return home, ws, tmp


def _request(home, writable=(), mode="workspace-write") -> SandboxRequest:
    return SandboxRequest(mode=mode, network=False, writable=list(writable),
                          hidden=[str(home / ".ssh"), str(home / ".aws")], hide_with="rules",
                          landlock_abi=7)


def reused(make, between=lambda attempt: None) -> dict:
    """Checks that a second call reuses the first call's plan and returns its stamps. Another
    process may change a folder above the tree meanwhile (a new entry in /tmp): that rightly
    makes a new plan, so the pair of calls is tried again until one sees no such change."""
    for attempt in range(20):
        plan = make()
        first = plan()
        stamps = dict(plan.cache._kept["key"][1])
        between(attempt)
        if plan() is first and plan.made == 1:
            return stamps
        assert any(_read(what) != stamp for what, stamp in stamps.items()), "planned again with nothing changed"
    pytest.fail("every attempt saw a folder above the tree change; the machine is too busy to tell")


def test_an_unchanged_tree_reuses_the_plan(tree):
    home, ws, tmp = tree
    (home / ".ssh").mkdir()
    stamps = reused(lambda: Planner(PlanCache(clock=later), _request(home), ws, tmp),
                    between=lambda attempt: (ws / f"new-file-{attempt}").write_text("x"))
    assert ("listing", str(ws)) not in stamps       # the workspace's own entries decide nothing


def test_a_secret_made_after_the_plan_is_hidden_by_the_next(tree):
    home, ws, tmp = tree
    plan = Planner(PlanCache(clock=later), _request(home), ws, tmp)
    assert plan()[0].hidden == ()
    (home / ".aws").mkdir()
    policy, _ = plan()
    assert policy.hidden == (str(home / ".aws"),) and plan.made == 2


def test_a_writable_folder_swapped_for_a_link_is_resolved_again(tree):
    home, ws, tmp = tree
    (home / ".ssh").mkdir()
    plan = Planner(PlanCache(clock=later), _request(home, [str(ws / "build")]), ws, tmp)
    assert str(ws / "build") in plan()[0].writable
    (ws / "build").rmdir()
    (ws / "build").symlink_to(home / ".ssh")
    policy, _ = plan()
    assert plan.made == 2 and str(home / ".ssh") in policy.writable


def test_a_link_pointed_elsewhere_is_resolved_again(tree):
    home, ws, tmp = tree
    (home / "a").mkdir()
    (home / "b").mkdir()
    (ws / "build").rmdir()
    (ws / "build").symlink_to(home / "a")
    plan = Planner(PlanCache(clock=later), _request(home, [str(ws / "build")]), ws, tmp)
    assert str(home / "a") in plan()[0].writable
    (ws / "build").unlink()
    (ws / "build").symlink_to(home / "b")
    assert str(home / "b") in plan()[0].writable and plan.made == 2


def test_a_workspace_reached_through_a_link_is_resolved_again(tree):
    """Read-only: nothing lists the workspace's folder, so only the steps' stamps see the link
    move; a hidden folder that now holds the workspace must be hidden around it."""
    home, ws, tmp = tree
    (home / ".ssh" / "ws").mkdir(parents=True)
    link = tmp / "ws-link"
    link.symlink_to(ws)
    plan = Planner(PlanCache(clock=later), _request(home, mode="read-only"), link, tmp)
    assert plan()[0].hidden == (str(home / ".ssh"),)
    link.unlink()
    link.symlink_to(home / ".ssh" / "ws")
    policy, _ = plan()
    assert plan.made == 2 and policy.workspace == str(home / ".ssh" / "ws") and policy.hidden == ()


def test_a_folder_changed_just_before_planning_is_not_trusted(tree):
    home, ws, tmp = tree
    plan = Planner(PlanCache(), _request(home), ws, tmp)       # the real clock: home just changed
    plan()
    plan()
    assert plan.made == 2
    reused(lambda: Planner(PlanCache(clock=later), _request(home), ws, tmp))


@needs_landlock
def test_sandboxed_calls_see_a_secret_made_between_them(make_runner, workspace, tmp_path, scv_home, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setattr(choose, "_PLANS", PlanCache(clock=later))
    made = []
    planned = choose._plan
    monkeypatch.setattr(choose, "_plan", lambda *args: made.append(1) or planned(*args))
    runner = make_runner(sandbox_config())
    for _ in range(2):
        ok, value = bash(runner, f"ls -a {home}")
        assert ok, value
    assert len(made) == 1                       # the second call reused the plan
    planted = plant_secrets(home, scv_home)
    ok, value = bash(runner, f"cat {planted['SECRET-AWS']} {planted['SECRET-SSH']} ; true")
    assert ok, value
    assert "SECRET" not in value["output"] and len(made) == 2
    os.utime(home)      # its times move; its entries are the same: still a new plan, never a stale one
    ok, value = bash(runner, f"cat {planted['SECRET-NETRC']} ; true")
    assert ok and "SECRET" not in value["output"] and len(made) == 3
