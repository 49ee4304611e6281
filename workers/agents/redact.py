"""Redaction of progress lines: a display heuristic, not a guarantee.

Paths keep their last two components, URLs lose their query, fragment and user information, and
values that look like credentials (Bearer tokens, NAME=value or --name value where the name mentions a key,
token, secret or password, and well-known token prefixes) become `…`.
"""

import re

MAX_LINE = 200
HIDDEN = "…"

_SECRET_NAME = re.compile(r"(key|token|secret|passw|pwd|auth|credential|cookie|session)", re.IGNORECASE)
_PREFIXES = (r"(?:sk-|sk_|pk_live|rk_live|ghp_|gho_|ghu_|ghs_|ghr_|github_pat_|glpat-|xox[abprs]-|AKIA|ASIA|AIza|"
             r"xai-|hf_|npm_|pypi-|ya29\.|eyJ[A-Za-z0-9_-]{10,}\.)")
_TOKEN_PREFIXES = re.compile(r"^['\"]?" + _PREFIXES)
# A well-known token inside a word, after `=`, `:` or a quote (FOO=ghp_…, "X-Key:sk-…").
_EMBEDDED = re.compile(r"(?P<lead>[=:'\"])" + _PREFIXES + r"[^\s'\",;&]*")
# The user information of a URL (https://user:password@host, https://<token>@host).
_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)[^/\s@?#]+@")
_ASSIGN = re.compile(r"^(?P<name>-{0,2}[A-Za-z_][A-Za-z0-9_.-]*)=(?P<value>.+)$")
_URL = re.compile(r"(?P<base>[A-Za-z][A-Za-z0-9+.-]*://[^\s?#]*)[?#]\S*")


def _path(token: str) -> str:
    quote = token[0] if token[:1] in "'\"" else ""
    body = token.strip("'\"")
    parts = [p for p in body.split("/") if p]
    if len(parts) <= 2:
        return token
    return f"{quote}…/{'/'.join(parts[-2:])}{quote}"


def _token(token: str, previous: str) -> str:
    bare = previous.strip("'\"").lower()
    if bare == "bearer" or bare == "basic":
        return HIDDEN
    if previous.startswith("-") and _SECRET_NAME.search(previous) and "=" not in previous:
        return HIDDEN
    assign = _ASSIGN.match(token)
    if assign and _SECRET_NAME.search(assign.group("name")):
        return f"{assign.group('name')}={HIDDEN}"
    if _TOKEN_PREFIXES.match(token):
        return HIDDEN
    token = _EMBEDDED.sub(lambda m: m.group("lead") + HIDDEN, token)
    if "://" in token:
        token = _USERINFO.sub(lambda m: m.group("scheme") + HIDDEN + "@", token)
        return _URL.sub(lambda m: m.group("base"), token)
    if "/" in token:
        return _path(token)
    return token


def redact(line: str) -> str:
    """One display line: the first line of `line`, redacted and bounded."""
    text = _redact_words(line.strip().split("\n", 1)[0].replace("\r", ""))
    return text if len(text) <= MAX_LINE else text[: MAX_LINE - 1] + HIDDEN


def redact_message(text: str, limit: int = 2000) -> str:
    """An agent's error message for a result: every line redacted, joined into one, bounded."""
    lines = [_redact_words(line.strip()) for line in text.replace("\r", "").split("\n") if line.strip()]
    joined = " ".join(lines)
    return joined if len(joined) <= limit else joined[: limit - 1] + HIDDEN


def _redact_words(line: str) -> str:
    pieces = re.split(r"(\s+)", line)
    out, previous = [], ""
    for piece in pieces:
        if not piece or piece.isspace():
            out.append(piece)
            continue
        out.append(_token(piece, previous))
        previous = piece
    return "".join(out)
