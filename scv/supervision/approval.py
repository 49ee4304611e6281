"""Approval: the policy decides first, then the client's approver, never a silent wait.

`on-risk` runs read-only calls and asks about the rest; `never` runs read-only calls and denies
the rest, whatever the client would say. An approver is any callable
`(tool, risk, summary) -> bool`; with no person to ask, the request is denied with a sentence
saying how to allow it.
"""

import enum
import select
import sys
from typing import Callable, Protocol

from scv.core.cancellation import Cancellation
from scv.core.errors import RefusedError
from scv.core.messages import ApprovalRequest
from scv.core.risk import Risk


class Verdict(enum.Enum):
    RUN = "run"
    ASK = "ask"
    DENY = "deny"


def policy_verdict(policy: str, risk: Risk) -> Verdict:
    if risk is Risk.READ_ONLY:
        return Verdict.RUN
    return Verdict.ASK if policy == "on-risk" else Verdict.DENY


class Approver(Protocol):
    def __call__(self, tool: str, risk: Risk, summary: str) -> bool: ...


def approve_all(tool: str, risk: Risk, summary: str) -> bool:
    return True


def no_person(tool: str, risk: Risk, summary: str) -> bool:
    raise RefusedError(f"{tool} needs approval ({risk.value} risk) and there is no terminal to ask; "
                        "run again with --auto-approve to allow it")


def terminal_approver(prompt_stream=None, answer_stream=None) -> Approver:
    """Asks y/N on stderr and reads the answer from stdin (a terminal)."""
    out = prompt_stream or sys.stderr
    inp = answer_stream or sys.stdin

    def ask(tool: str, risk: Risk, summary: str, cancel: Cancellation | None = None) -> bool:
        out.write(f"scv: {tool} ({risk.value}) wants to {summary}\nAllow? [y/N] ")
        out.flush()
        if cancel is not None:
            # The turn cancelled, or the run's limit reached, while the person had not answered: denied.
            if cancel.fileno() in select.select([inp.fileno(), cancel.fileno()], [], [])[0] or cancel.cancelled:
                out.write("\nscv: not asked any more (the turn stopped); denied\n")
                out.flush()
                return False
        answer = inp.readline()
        return answer.strip().lower() in ("y", "yes")
    return ask


def choose_approver(auto_approve: bool, stdin_is_terminal: bool) -> Approver:
    if auto_approve:
        return approve_all
    return terminal_approver() if stdin_is_terminal else no_person


def relayed_verdict(policy: str, ask: ApprovalRequest, ask_someone: Callable[[Risk], bool]) -> bool:
    """The answer to a request a delegated agent relays (an ACP permission request, a nested SCV's
    approval): the same policy as the session's own calls, and only where it says ask,
    `ask_someone(risk)`, which asks the client or gives the answer of a session nobody watches. A
    risk this SCV does not know is taken as the delegation's."""
    try:
        risk = Risk(ask.risk)
    except ValueError:
        risk = Risk.DELEGATE
    verdict = policy_verdict(policy, risk)
    if verdict is not Verdict.ASK:
        return verdict is Verdict.RUN
    return ask_someone(risk)


def check_approval(policy: str, risk: Risk, tool: str, summary: str, approver: Approver) -> None:
    """Returns if the call may run; raises RefusedError (exit 2) with the reason otherwise."""
    verdict = policy_verdict(policy, risk)
    if verdict is Verdict.RUN:
        return
    if verdict is Verdict.DENY:
        raise RefusedError(f"{tool} has {risk.value} risk and tools.approval_policy is \"never\", which denies it; "
                           "set the policy to \"on-risk\" to be asked instead")
    if not approver(tool, risk, summary):
        raise RefusedError(f"approval for {tool} was denied")

