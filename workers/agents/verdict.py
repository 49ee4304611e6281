"""Reading a structured error: what kind of failure it is, and whether it reads like a sign-in.

Only the CLI's structured error (or, for plain-text agents, its stderr) is read here, never the
agent's reply, so nothing the agent's model writes can make SCV suggest another agent.
"""

import re

from workers.agents.report import HTTP, MODEL, QUOTA, SIGNIN

_SIGNIN = re.compile(
    r"not logged in|please run /login|use /login|log ?in to|not signed in|signed out|no api key|"
    r"missing[_ ]credential|authentication[_ ]required|authentication[_ ]failed|invalid (?:x-)?api[ -]key|"
    r"incorrect api key|missing environment variable|\b401\b|unauthori[sz]ed", re.IGNORECASE)
_QUOTA = re.compile(r"\b429\b|too many requests|rate[_ ]limit|quota|usage limit|insufficient[_ ]balance|"
                    r"exceeded retry limit", re.IGNORECASE)
_MODEL = re.compile(r"model\b.*(?:does not exist|not found|unknown|not available|no access)|"
                    r"unknown model|\b404\b", re.IGNORECASE)
_HTTP = re.compile(r"\b403\b|forbidden|\b5\d\d\b|internal server error|overloaded|high demand|"
                   r"service unavailable|bad gateway|server[_ ]error|stream disconnected", re.IGNORECASE)


def classify(text: str | None, status: int | None = None) -> str | None:
    """The availability kind of an error (signin, quota, model, http) or None for other failures."""
    if status is not None:
        if status in (401,):
            return SIGNIN
        if status == 429:
            return QUOTA
        if status == 404:
            return MODEL
        if status == 403 or 500 <= status <= 599:
            return HTTP
    if not text:
        return None
    if _SIGNIN.search(text):
        return SIGNIN
    if _QUOTA.search(text):
        return QUOTA
    if _MODEL.search(text):
        return MODEL
    if _HTTP.search(text):
        return HTTP
    return None


def reads_like_signin(text: str | None) -> bool:
    return bool(text and _SIGNIN.search(text))
