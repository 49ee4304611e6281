"""Approvals relayed from inside a background job: what the session would answer without asking
anyone, never more than the same request would get in the foreground."""

import pytest

from scv.core.messages import ApprovalRequest
from scv.jobs.manager import Jobs


def answer(policy: str, auto_approve: bool, risk: str) -> bool:
    jobs = Jobs(4, policy, auto_approve, lambda build: None)
    return jobs.answer_unasked(ApprovalRequest(id="1", tool="bash", risk=risk, summary="x"))


@pytest.mark.parametrize("policy,auto,risk,expected", [
    ("on-risk", False, "read_only", True),      # 1. the policy alone approves read-only requests
    ("never", False, "read_only", True),
    ("never", True, "process", False),          # 1. `never` denies the rest, whatever the client says
    ("on-risk", True, "process", True),         # 2. the client's declared auto-approval
    ("on-risk", True, "delegate", True),
    ("on-risk", False, "process", False),       # 3. otherwise a denial: nobody is asked
    ("on-risk", False, "no-such-risk", False),  # an unknown risk is treated as delegate
])
def test_three_rules(policy, auto, risk, expected):
    assert answer(policy, auto, risk) is expected
