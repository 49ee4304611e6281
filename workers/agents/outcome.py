"""The decision at the end of a run: status, reply, error, hint and whether another agent could
avoid the failure, from the process outcome and the parser's report only."""

import re
from dataclasses import dataclass

from workers.agents import verdict
from workers.agents.capture import bound
from workers.agents.report import AVAILABILITY, TurnReport
from workers.running.process_runner import RunOutcome

MAX_ERROR_CHARS = 2000
# stderr lines that say nothing about a failure (Codex prints them on every run).
_NOISE = ("Reading additional input from stdin", "WARNING: proceeding, even though we could not create PATH aliases")
UNAVAILABLE_EXIT_CODES = (126, 127)   # the shell convention for "cannot execute" and "not found"


@dataclass
class Decision:
    status: str
    reply: str
    truncated: bool
    error: str | None
    hint: str | None
    available: bool             # False: another agent could avoid this failure (a `fallback`)


def summarize_stderr(stderr: str) -> str:
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    lines = [line for line in lines if not line.startswith(_NOISE)]
    return " ".join(lines)[-MAX_ERROR_CHARS:]


def closing_output(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return " ".join(lines[-5:])[-MAX_ERROR_CHARS:]


ROOT_HINT = ("{agent} refuses its full-permission switch when it runs as root: ask the user to run SCV as another "
             "user, or to set [agents.{agent}] permissions = \"default\" (then it cannot write or run commands unasked).")
# Failures other than sign-in that the calling model can act on, by the CLI's own words.
SITUATION_HINTS = (
    (re.compile(r"Not inside a trusted directory|skip-git-repo-check"),
     "{agent} runs only inside a git repository: call agent again with a cwd inside one, or ask the user to "
     "run `git init` in the workspace."),
    (re.compile(r"cannot be used with root/sudo privileges"), ROOT_HINT),
)


def situation_hint(agent: str, *texts: str | None) -> str | None:
    for pattern, hint in SITUATION_HINTS:
        if any(text and pattern.search(text) for text in texts):
            return hint.format(agent=agent)
    return None


def hint_for(agent: str) -> str:
    return (f"{agent} looks signed out of its SCV home. Ask the user to run `scv agents login {agent}` on the SCV "
            "host (the agent's own advice, such as /login, cannot be followed from here), then call agent again.")


def decide(agent: str, outcome: RunOutcome, stopped_after_result: bool, report: TurnReport | None, *,
           stdout_text: str, stdout_cut: bool, stderr_text: str, fallback_reply: str | None,
           limit_bytes: int, timeout_seconds: float) -> Decision:
    structured = report is not None
    if structured and report.reply is not None:
        reply = report.reply
    elif structured and fallback_reply:
        reply = fallback_reply
    elif not structured or report.json_lines == 0:
        reply = stdout_text                     # plain text, or a structured stream with no JSON
    else:
        reply = ""
    reply, cut = bound(reply, limit_bytes)
    cut = cut or (stdout_cut and (not structured or report.json_lines == 0))
    stderr_summary = summarize_stderr(stderr_text)
    error, kind = None, None
    abnormal_exit = not stopped_after_result and (outcome.signal is not None or (outcome.exit_code or 0) != 0)
    if outcome.timed_out:
        status = "timeout"
        error = f"{agent} ran past the timeout of {timeout_seconds:g} s and was stopped"
    elif outcome.cancelled and not stopped_after_result:
        status = "cancelled"
        error = f"{agent} was cancelled and its processes stopped"
    elif structured and report.refusal:
        status = "declined"
    elif (structured and report.error) or abnormal_exit:
        status = "failed"
        if structured and report.error:
            error, kind = report.error, report.error_kind
        else:
            exit_text = (f"exited with status {outcome.exit_code}" if outcome.exit_code is not None
                         else f"was killed by {outcome.signal}")
            closing = "" if structured else closing_output(stdout_text)
            error = closing or stderr_summary or f"{agent} {exit_text}"
            # The kind comes from the CLI's structured error or its stderr, never from the reply.
            kind = verdict.classify(stderr_summary)
            if outcome.exit_code in UNAVAILABLE_EXIT_CODES:
                kind = kind or "exit"
    else:
        status = "completed"
    hint = None
    if status == "failed" and (verdict.reads_like_signin(error) or verdict.reads_like_signin(stderr_summary)):
        hint = hint_for(agent)
    elif status == "failed":
        hint = situation_hint(agent, error, stderr_summary)
    if error is not None and len(error) > MAX_ERROR_CHARS:
        error, cut = error[:MAX_ERROR_CHARS - 1] + "…", True
    available = not (status == "failed" and (kind in AVAILABILITY or kind == "exit"))
    return Decision(status, reply, cut, error, hint, available)
