"""`read_skill`: the SKILL.md of a skill discovered when the session started, by name only.

The name must be in the session's map (`scv.skills.index`); the worker opens the folder recorded
then, beneath the same root, through no symbolic link, so the tool is never a general read of
paths outside the workspace. The system prompt lists the skills (`scv.skills.prompt`).
"""

from typing import Annotated

import msgspec
from msgspec import Meta

from scv.core.errors import RefusedError
from scv.skills.index import Skill
from scv.skills.prompt import skills_section
from scv.tools.base import Risk, ToolContext, ToolSpec


class ReadSkillArgs(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    name: Annotated[str, Meta(max_length=200, description=(
        "The skill's name as the system prompt lists it, such as release-checks or web:deploy."))]


class ReadSkillTool(ToolSpec):
    name = "read_skill"
    description = ("Read a skill's instructions (its SKILL.md) by the name the system prompt lists. Returns the "
                   "content, the skill's folder (paths in the skill are relative to it), its size in bytes and "
                   "whether the content was truncated.")
    Args = ReadSkillArgs
    executor = "workers.read_skill:execute"
    declared_risk = Risk.READ_ONLY
    example = {"name": "release-checks"}

    def skill(self, args: ReadSkillArgs, ctx: ToolContext) -> Skill:
        skill = ctx.skills.get(args.name) if ctx.skills is not None else None
        if skill is None:
            names = [s.name for s in ctx.skills.skills] if ctx.skills is not None else []
            listed = ", ".join(names[:30]) + (f" and {len(names) - 30} more" if len(names) > 30 else "")
            raise RefusedError(f"there is no skill named {args.name[:80]!r}; read_skill takes a name the system "
                               f"prompt lists: {listed or 'none'}")
        return skill

    def check(self, args: ReadSkillArgs, ctx: ToolContext) -> None:
        self.skill(args, ctx)

    def summary(self, args: ReadSkillArgs, ctx: ToolContext) -> str:
        return f"read skill {args.name} ({self.skill(args, ctx).path}/SKILL.md)"

    def worker_args(self, args: ReadSkillArgs, ctx: ToolContext) -> dict:
        skill = self.skill(args, ctx)
        limit = min(ctx.config.skills.max_skill_bytes, ctx.config.tools.output_limit_bytes)
        return {"name": skill.name, "root": skill.root, "root_id": list(skill.root_id), "folder": list(skill.folder),
                "limit": limit}

    def system_prompt_section(self, ctx: ToolContext) -> str | None:
        if ctx.skills is None:
            return None
        return skills_section(ctx.skills, delegate=self.services.delegation_offered(ctx))
