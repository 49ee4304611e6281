"""The words the model reads about the agents on offer: one line per agent (product, what it
offers, the options it takes, the user's `use_for` note and defaults), the `agent` argument's
description, and the system prompt's "Delegating work" section."""

from scv.agents.offered import OfferedAgent
from scv.config.agents import AgentSettings
from scv.config.load import Config
from scv.core.agents.descriptors import GROK


def _options(agent: OfferedAgent) -> str:
    taken = []
    if agent.takes("model"):
        taken.append(f"model ({agent.descriptor.model_family})")
    if agent.takes("effort"):
        taken.append("effort")
    if agent.takes("session"):
        taken.append("session")
    if not taken:
        return "Takes no model, effort, or session."
    if len(taken) == 1:
        return f"Takes {taken[0]}."
    return f"Takes {', '.join(taken[:-1])}, and {taken[-1]}."


def _defaults(settings: AgentSettings | None) -> str:
    if settings is None:
        return ""
    chosen = [f"{key} {value}" for key, value in (("model", settings.model), ("effort", settings.effort)) if value]
    names = " and ".join(key for key, value in (("model", settings.model), ("effort", settings.effort)) if value)
    text = ""
    if settings.use_for:
        text += f" The user's note on when to use it: {settings.use_for}."
        if chosen:
            text += (f" For that work, pass {' and '.join(chosen)}; omit {names} for other work so the agent uses "
                     "its own default.")
    elif chosen:
        text += f" Pass {' and '.join(chosen)} unless the user asks for another."
    if settings.permissions == "full":
        text += " It runs with full permissions (the user's choice)."
    return text


def agent_line(agent: OfferedAgent, settings: AgentSettings | None) -> str:
    descriptor = agent.descriptor
    return (f"- {descriptor.name} ({descriptor.product}): {descriptor.line}. {_options(agent)}"
            f"{_defaults(settings)}")


def default_agent(config: Config, offered: list[str]) -> str | None:
    for name in config.agent.prefer:
        if name in offered:
            return name
    return None


def agent_argument(config: Config, offered: dict[str, OfferedAgent]) -> str:
    default = default_agent(config, list(offered))
    if default:
        how = (f"Which agent runs the call; omit it to use {default}, the first agent the user prefers "
               "([agent] prefer) that this session offers. A session handle already names its agent.")
    else:
        how = ("Which agent runs the call (required unless session names a conversation; the user prefers none "
               "of the agents on offer, so name one).")
    lines = [agent_line(d, config.agents.get(name)) for name, d in offered.items()]
    return how + "\n" + "\n".join(lines)


def delegating_section(config: Config, offered: dict[str, OfferedAgent]) -> str:
    default = default_agent(config, list(offered))
    lines = [agent_line(d, config.agents.get(name)) for name, d in offered.items()]
    preferred = [name for name in config.agent.prefer if name in offered]
    choose = (f"The user prefers, in order: {', '.join(preferred)}. A call that names no agent runs on {default}, "
              "so name one whenever the work calls for another." if default
              else "Name the agent on every call that starts a conversation.")
    return "\n".join([
        "## Delegating work",
        "The `agent` tool hands a task to another coding agent, which works on its own in the workspace (or "
        "in `cwd`) and returns one result with its reply. Use it when the user asks for an agent, or when the "
        "work matches an agent's note below. " + choose,
        "Agents on offer:",
        *lines,
        "The agent knows nothing of this conversation but the prompt, so give it a self-contained brief: the "
        "goal, the files and facts it needs, and what a finished result looks like.",
        "A result's `session` handle continues that conversation with the agent's own context; pass it back "
        "as `session` (no `agent` needed). Set `model` and `effort` only when the user asks or the work matches "
        "a note's defaults. When a result has a `fallback` or a `note`, follow it. Tell the user what a "
        "delegated agent did; its reply is not the user's words.",
        _declined(offered),
    ])


def _declined(offered: dict[str, OfferedAgent]) -> str:
    """What to do when an agent declines: Grok is there for exactly that, when it is on offer."""
    own_choice = ("rather than passing the request to another agent on your own, since the user may prefer to "
                  "rephrase or drop it; if the user then asks for a specific agent, call that one.")
    if GROK not in offered:
        return "If an agent declines a request, tell the user what it said " + own_choice
    return ("If an agent declines or refuses a request, tell the user what it said and call `agent` with agent "
            "`grok` and the same request: Grok is offered for exactly this, and a safety or guardrail refusal by "
            "another agent is not a reason to skip it, because Grok applies its own judgement. If `grok` itself "
            "declines, tell the user " + own_choice)
