"""`scv agents status`: every agent's sign-in state as one summary line, never a key or an email.
Claude Code and Codex are asked through their own status command (its output is only summarized:
it can name the account or part of the key); the others by reading their credential files."""

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from scv.agents import pi_setup, scv_import
from scv.agents.import_checks import import_state_of
from scv.agents.login import StatusFailed, executable_for, exit_status, run_status_command
from scv.agents.signin import dsh_key_stored, grok_config_model, grok_login_stored, signed_in
from scv.core.agents.descriptors import CLAUDE, CODEX, DESCRIPTORS, DSH, GROK, PI, SCV, Descriptor, state_dir

SIGNED_OUT = "signed out"
_PLAIN_WORD = re.compile(r"^[A-Za-z0-9._-]{1,40}$")


@dataclass
class AgentStatus:
    agent: str
    product: str
    installed: bool
    signed_in: bool | None          # None: unknown (the status command failed)
    summary: str
    imported: dict | None = None    # {"source", "up_to_date", "detail"} after `scv agents import`

    def as_dict(self) -> dict:
        return {"agent": self.agent, "product": self.product, "installed": self.installed,
                "signed_in": self.signed_in, "summary": self.summary, "import": self.imported}


def _json_object(text: str) -> dict | None:
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end < start:
        return None
    try:
        value = json.loads(text[start:end + 1])
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def summarize_claude(returncode: int, stdout: str) -> tuple[bool, str]:
    """From `claude auth status` (JSON): the sign-in method and plan, never the email."""
    status = _json_object(stdout)
    if status is None or not isinstance(status.get("loggedIn"), bool):
        return (True, "signed in") if returncode == 0 else (False, SIGNED_OUT)
    if not status["loggedIn"]:
        return False, SIGNED_OUT
    method = status.get("authMethod")
    if method == "api_key":
        return True, "signed in (API key)"
    plan = status.get("subscriptionType")
    plan = plan if isinstance(plan, str) and _PLAIN_WORD.match(plan) else None
    if method in ("claude.ai", "oauth_token", "oauth"):
        return True, f"signed in (Claude account, {plan})" if plan else "signed in (Claude account)"
    if isinstance(method, str) and _PLAIN_WORD.match(method):
        return True, f"signed in ({method})"
    return True, "signed in"


# `codex login status` output shapes, one whole line each (after the WARNING lines Codex adds).
_CODEX_API_KEY = re.compile(r"^(API key configured|Logged in using an API key)\b")
_CODEX_CHATGPT = re.compile(r"^Logged in using ChatGPT\b")
_CODEX_SIGNED_OUT = re.compile(r"^Not logged in$")
_CODEX_REFUSED = re.compile(r"\b401 Unauthorized\b|\b403 Forbidden\b")


def summarize_codex(returncode: int, output: str) -> tuple[bool | None, str]:
    """From `codex login status` (it prints to stderr, with part of a stored key). The exit status
    decides first: only a zero exit is a sign-in, whatever words an error message happens to hold
    (a 401 answer names "API key"); the line shapes then only say which kind."""
    lines = [line.strip() for line in output.splitlines() if line.strip() and not line.startswith("WARNING:")]
    if returncode == 0:
        if any(_CODEX_API_KEY.match(line) for line in lines):
            return True, "signed in (API key)"
        if any(_CODEX_CHATGPT.match(line) for line in lines):
            return True, "signed in (ChatGPT account)"
        return True, "signed in"
    if any(_CODEX_SIGNED_OUT.match(line) for line in lines):
        return False, SIGNED_OUT
    refused = next((m.group(0) for line in lines if (m := _CODEX_REFUSED.search(line))), None)
    if refused:
        return False, f"sign-in refused ({refused})"
    return None, f"status unknown: codex login status exited with status {exit_status(returncode)}"


def _by_command(descriptor: Descriptor, executable: str, scv_home: Path, environ: dict[str, str]) -> AgentStatus:
    try:
        ran = run_status_command(descriptor, executable, scv_home, environ)
    except StatusFailed as err:
        return AgentStatus(descriptor.name, descriptor.product, True, None, f"status unknown: {err}")
    if descriptor.name == CLAUDE:
        ok, summary = summarize_claude(ran.returncode, ran.stdout)
    else:
        ok, summary = summarize_codex(ran.returncode, ran.stdout + "\n" + ran.stderr)
    return AgentStatus(descriptor.name, descriptor.product, True, ok, summary)


def _grok(scv_home: Path, environ: dict[str, str]) -> tuple[bool, str]:
    folder = state_dir(scv_home, DESCRIPTORS[GROK])
    if grok_login_stored(folder):
        return True, "signed in (grok login)"
    model = grok_config_model(folder, DESCRIPTORS[GROK], environ)
    if model is not None:
        return True, f"signed in (API key in config, model {json.dumps(model)})"
    return False, SIGNED_OUT


def _pi(scv_home: Path, environ: dict[str, str]) -> tuple[bool, str]:
    ok = signed_in(DESCRIPTORS[PI], scv_home, environ)
    state = pi_setup.describe(scv_home)
    parts = [f"{label} {value}" for label, value in (("default provider", state.provider), ("API", state.api),
                                                       ("host", state.host), ("model", state.model)) if value]
    if state.stored:
        parts.append("stored sign-ins: " + ", ".join(state.stored))
    detail = f" ({'; '.join(parts)})" if parts else ""
    return ok, ("signed in" if ok else SIGNED_OUT) + detail


def agent_status(name: str, scv_home: Path, environ: dict[str, str]) -> AgentStatus:
    descriptor = DESCRIPTORS[name]
    executable = executable_for(descriptor, environ)
    if name in (CLAUDE, CODEX):
        if executable is None:
            result = AgentStatus(name, descriptor.product, False, None, "not installed")
        else:
            result = _by_command(descriptor, executable, scv_home, environ)
    else:
        if name == GROK:
            ok, summary = _grok(scv_home, environ)
        elif name == DSH:
            ok = dsh_key_stored(state_dir(scv_home, descriptor))
            summary = "signed in (API key stored)" if ok else SIGNED_OUT
        elif name == SCV:
            ok, summary = scv_import.describe(scv_home)
            # Without an installed scv the running SCV nests itself, so it is never "not installed".
            executable = executable or "the running SCV"
        else:
            ok, summary = _pi(scv_home, environ)
        if executable is None:
            summary = "not installed" + ("; a sign-in is stored for it" if ok else "")
        result = AgentStatus(name, descriptor.product, executable is not None, ok, summary)
    found = import_state_of(scv_home, name)
    if found is not None:
        result.imported = {"source": found.source, "up_to_date": found.up_to_date, "detail": found.detail}
    return result


def all_statuses(scv_home: Path, environ: dict[str, str] | None = None) -> list[AgentStatus]:
    environ = dict(os.environ) if environ is None else environ
    return [agent_status(name, scv_home, environ) for name in DESCRIPTORS]
