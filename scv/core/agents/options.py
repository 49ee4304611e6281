"""The grammar of the values a model may pass to an agent: model, effort, prompt, blank values.

Each selected value becomes one argument, never shell text; these checks keep a value from
being read as a flag and keep it short, and the CLI itself reports values it does not support.
"""

import re

from scv.core.errors import RefusedError

EFFORTS = ("low", "medium", "high", "xhigh", "max")
_MODEL = r"[A-Za-z0-9._:/@\[\]-]{1,128}"
MAX_PROMPT_BYTES = 1 << 20


def blank_to_none(value: str | None) -> str | None:
    """Models often send "" for an optional field they mean to leave unset."""
    return None if value is None or value.strip() == "" else value


def check_model(model: str, where: str = "agent model") -> None:
    if not re.fullmatch(_MODEL, model):
        raise RefusedError(f"{where} {model!r} is not a model name: use 1-128 ASCII letters, digits or ._:/@[]-")
    if model[0] in "-@":
        raise RefusedError(f"{where} {model!r} cannot start with {model[0]!r}; pass the model's name")


def check_effort(effort: str, where: str = "agent effort") -> None:
    if effort not in EFFORTS:
        raise RefusedError(f"{where} {effort!r} is not one of {', '.join(EFFORTS)}; pass one of them or omit it")


def check_prompt(prompt: str) -> None:
    if not prompt.strip():
        raise RefusedError("agent prompt is empty; say what the agent should do")
    if prompt.lstrip().startswith("-"):
        raise RefusedError("agent prompt cannot start with '-' (it would be read as a flag); reword its start")
    if "\x00" in prompt:
        raise RefusedError("agent prompt contains a NUL byte; remove it")
    if len(prompt.encode("utf-8", "surrogatepass")) > MAX_PROMPT_BYTES:
        raise RefusedError(f"agent prompt is over {MAX_PROMPT_BYTES} bytes; shorten it or put the details in a file")
