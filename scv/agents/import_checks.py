"""Every recorded import of an agent setup (`scv agents import ...`) compared with its source now:
one table for `scv agents status` and `scv config show`, so both say the same thing."""

from pathlib import Path
from typing import Callable

from scv.agents import grok_import, pi_import, scv_import
from scv.agents.imports import ImportState, codex_digest_now, import_state
from scv.core.agents.descriptors import CODEX, DESCRIPTORS, GROK, PI, SCV

# agent -> (the digest of its source now, from scv_home and the recorded source; the command to re-run)
_IMPORTS: dict[str, tuple[Callable[[Path, str], str], str]] = {
    CODEX: (lambda scv_home, source: codex_digest_now(source), "scv agents import codex --from {source}"),
    GROK: (lambda scv_home, source: grok_import.current_digest(source), grok_import.RERUN),
    PI: (lambda scv_home, source: pi_import.current_digest(scv_home), "scv agents import pi --from-scv-provider"),
    SCV: (lambda scv_home, source: scv_import.current_digest(scv_home), scv_import.RERUN),
}


def import_state_of(scv_home: Path, agent: str) -> ImportState | None:
    """None when the agent takes no import or none was recorded."""
    if agent not in _IMPORTS:
        return None
    digest_now, rerun = _IMPORTS[agent]
    return import_state(scv_home, agent, lambda source: digest_now(scv_home, source), rerun)


def import_states(scv_home: Path) -> dict[str, ImportState]:
    """The recorded imports, in the agent catalog's order."""
    found = {name: import_state_of(scv_home, name) for name in DESCRIPTORS}
    return {name: state for name, state in found.items() if state is not None}
