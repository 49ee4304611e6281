"""Approval decisions: policy first, then the client's approver, never a silent wait."""

import io

import pytest

from scv.config.load import Config, ToolsConfig
from scv.core.errors import RefusedError
from scv.supervision.approval import Verdict, check_approval, choose_approver, no_person, policy_verdict, terminal_approver
from scv.tools.base import Risk


@pytest.mark.parametrize("policy, risk, verdict", [
    ("on-risk", Risk.READ_ONLY, Verdict.RUN), ("on-risk", Risk.PROCESS, Verdict.ASK),
    ("never", Risk.READ_ONLY, Verdict.RUN), ("never", Risk.FILESYSTEM, Verdict.DENY),
    ("never", Risk.NETWORK, Verdict.DENY), ("on-risk", Risk.DELEGATE, Verdict.ASK),
])
def test_policy_verdicts(policy, risk, verdict):
    assert policy_verdict(policy, risk) is verdict


def test_never_denies_even_with_an_approving_client():
    with pytest.raises(RefusedError, match='"never"'):
        check_approval("never", Risk.PROCESS, "bash", "run x", choose_approver(True, False))


def test_no_terminal_means_denied_with_a_way_out():
    with pytest.raises(RefusedError, match="--auto-approve"):
        check_approval("on-risk", Risk.PROCESS, "bash", "run x", no_person)


def test_read_only_never_asks():
    def explode(*_):
        raise AssertionError("asked")
    check_approval("on-risk", Risk.READ_ONLY, "read", "read a", explode)


@pytest.mark.parametrize("answer, allowed", [("y\n", True), ("yes\n", True), ("\n", False), ("n\n", False),
                                             ("", False)])
def test_terminal_answers(answer, allowed):
    prompt = io.StringIO()
    ask = terminal_approver(prompt, io.StringIO(answer))
    if allowed:
        check_approval("on-risk", Risk.FILESYSTEM, "write", "create a", ask)
    else:
        with pytest.raises(RefusedError, match="denied"):
            check_approval("on-risk", Risk.FILESYSTEM, "write", "create a", ask)
    assert "write (filesystem) wants to create a" in prompt.getvalue()
    assert "[y/N]" in prompt.getvalue()


def test_a_denied_call_never_reaches_a_worker(make_runner, workspace):
    runner = make_runner(Config(tools=ToolsConfig(approval_policy="never")))
    prepared = runner.prepare("write", {"path": "f", "content": "x", "mode": "create"})
    with pytest.raises(RefusedError):
        runner.approve(prepared)
    assert not (workspace / "f").exists()
