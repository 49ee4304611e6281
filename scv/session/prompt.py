"""The session's system prompt: the configured (or client's) base text, or the built-in one,
followed by the sections that the offered tools contribute."""

from scv.tools.base import ToolContext, ToolSpec

DEFAULT_SYSTEM_PROMPT = """\
You are SCV, a headless agent working in a software workspace with nobody watching. Use the tools
to inspect and change the workspace: read files before changing them, run commands to check your
work, and keep changes to what the task needs. Each tool call runs on its own and returns a JSON
result; a failed call returns an "error" you should read and act on. Calls that change files or run
commands may be denied by the approval policy; when that happens, say what you could not do instead
of retrying the same call. When the task is done, reply with a short account of what you did and
found, naming the files you changed."""


def system_prompt(base: str | None, specs: list[ToolSpec], ctx: ToolContext) -> str:
    parts = [(base or DEFAULT_SYSTEM_PROMPT).strip(), f"The workspace is {ctx.workspace}."]
    for spec in specs:
        section = spec.system_prompt_section(ctx)
        if section:
            parts.append(section.strip())
    return "\n\n".join(parts)
