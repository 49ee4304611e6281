"""Skill discovery, once at session start: the name-to-folder map `read_skill` answers from.

Roots, in order (the first root to map a name wins):
1. the user's: `$SCV_HOME/skills`, then `~/.agents/skills` when it exists;
2. project skills (tool-enabled sessions): `.agents/skills` and `.claude/skills` of the workspace,
   mapped as `workspace:<name>`, then of each child project (a direct, non-hidden subfolder with its
   own `.git`, `AGENTS.md` or `CLAUDE.md`), mapped as `<folder>:<name>`.
A skill is a direct subfolder of a root holding a regular `SKILL.md` whose front matter is valid
(see `front_matter`). A symlinked folder is resolved and kept only if it stays under its root;
the folder is recorded in canonical form with the root's identity, so `read_skill` can refuse a
folder swapped for a link since. An invalid folder costs one stderr line, never the session.
"""

import os
import re
import stat
import sys
from pathlib import Path
from typing import Callable

import msgspec


WORKSPACE_PROJECT = "workspace"     # how the workspace's own skills are named: workspace:<name>
PROJECT_NAME = r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}"
PROJECT_ROOTS = (".agents/skills", ".claude/skills")
PROJECT_MARKERS = (".git", "AGENTS.md", "CLAUDE.md")
MAX_ENTRIES = 4096                  # entries of one folder looked at (a root, the workspace)

Warn = Callable[[str], None]


def warn_on_stderr(line: str) -> None:
    print(f"scv: {line}", file=sys.stderr, flush=True)


# Structs rather than dataclasses: every command's start-up defines them, and Structs cost far less.
class Skill(msgspec.Struct, frozen=True):
    name: str                       # as mapped: "release-checks", "web:deploy", "workspace:release"
    description: str
    root: str                       # the root's canonical path
    root_id: tuple[int, int]        # (st_dev, st_ino) of the root when discovered
    folder: tuple[str, ...]         # the skill folder's canonical components below the root
    project: str | None = None      # None for a user skill
    cwd: str | None = None          # a project's folder relative to the workspace ("." for the workspace)

    @property
    def path(self) -> str:
        return os.path.join(self.root, *self.folder)


class SkillIndex(msgspec.Struct, frozen=True):
    skills: tuple[Skill, ...] = ()

    def get(self, name: str) -> Skill | None:
        # A scan: an index holds at most skills.max_skills (64 by default), and is asked rarely.
        return next((skill for skill in self.skills if skill.name == name), None)

    @property
    def user(self) -> list[Skill]:
        return [skill for skill in self.skills if skill.project is None]

    @property
    def projects(self) -> list[Skill]:
        return [skill for skill in self.skills if skill.project is not None]


class Root(msgspec.Struct, frozen=True):
    path: Path
    project: str | None = None
    cwd: str | None = None
    inside: Path | None = None      # a project root must resolve inside this folder (the workspace)


def _listing(folder: Path) -> list[str]:
    names = []
    with os.scandir(folder) as entries:
        for entry in entries:
            names.append(entry.name)
            if len(names) >= MAX_ENTRIES:
                break
    return sorted(names)


def _child_projects(workspace: Path, warn: Warn) -> list[str]:
    try:
        names = _listing(workspace)
    except OSError:
        return []
    children = []
    for name in names:
        path = workspace / name
        if name.startswith(".") or path.is_symlink() or not path.is_dir():
            continue
        if not any(os.path.lexists(path / marker) for marker in PROJECT_MARKERS):
            continue
        if name == WORKSPACE_PROJECT:
            warn(f"project skills of {path} are not mapped: the name {WORKSPACE_PROJECT!r} stands for the workspace "
                 "itself; rename the folder to use them")
        elif not re.fullmatch(PROJECT_NAME, name):
            warn(f"project skills of {path} are not mapped: a project name is 1 to 64 of A-Z, a-z, 0-9, '.', '_' "
                 "and '-', starting with a letter or digit")
        else:
            children.append(name)
    return children


def skill_roots(workspace: Path, home: Path, user_home: Path | None, *, project: bool, warn: Warn) -> list[Root]:
    roots = [Root(home / "skills")]
    if user_home is not None:
        roots.append(Root(user_home / ".agents" / "skills"))
    if project:
        for relative in PROJECT_ROOTS:
            roots.append(Root(workspace / relative, WORKSPACE_PROJECT, ".", workspace))
        for child in _child_projects(workspace, warn):
            for relative in PROJECT_ROOTS:
                roots.append(Root(workspace / child / relative, child, child, workspace))
    return roots


def _read_head(path: Path) -> bytes:
    from scv.skills.front_matter import MAX_HEAD_BYTES, FrontMatterError
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise FrontMatterError("its SKILL.md is not a regular file")
        return os.read(fd, MAX_HEAD_BYTES)
    finally:
        os.close(fd)


def _skill_in(root: Root, canonical_root: Path, root_id: tuple[int, int], name: str, warn: Warn) -> Skill | None:
    folder = root.path / name
    try:
        canonical = folder.resolve(strict=True)
    except (OSError, RuntimeError):
        warn(f"skill folder {folder} skipped: it is a broken or looping symbolic link")
        return None
    if canonical == canonical_root or not canonical.is_relative_to(canonical_root):
        warn(f"skill folder {folder} skipped: its symbolic link leads outside {canonical_root}")
        return None
    if not canonical.is_dir():
        return None     # a file beside the skills (a README), not a skill
    skill_md = canonical / "SKILL.md"
    try:
        info = os.lstat(skill_md)
    except OSError:
        warn(f"skill folder {folder} skipped: it has no SKILL.md")
        return None
    # Loaded once there is a SKILL.md to read: most workspaces have no skills.
    from scv.skills.front_matter import FrontMatterError, parse
    try:
        if stat.S_ISLNK(info.st_mode):
            raise FrontMatterError("its SKILL.md is a symbolic link")
        matter = parse(_read_head(skill_md))
    except FrontMatterError as err:
        warn(f"skill folder {folder} skipped: {err}")
        return None
    except OSError as err:
        warn(f"skill folder {folder} skipped: its SKILL.md cannot be read ({err.strerror})")
        return None
    mapped = matter.name if root.project is None else f"{root.project}:{matter.name}"
    return Skill(name=mapped, description=matter.description, root=str(canonical_root), root_id=root_id,
                 folder=canonical.relative_to(canonical_root).parts, project=root.project, cwd=root.cwd)


def discover(workspace: Path, home: Path, user_home: Path | None, *, max_skills: int, project: bool = True,
             warn: Warn = warn_on_stderr) -> SkillIndex:
    found: dict[str, Skill] = {}
    for root in skill_roots(workspace, home, user_home, project=project, warn=warn):
        if not os.path.lexists(root.path):
            continue
        try:
            canonical_root = root.path.resolve(strict=True)
            info = os.stat(canonical_root)
        except (OSError, RuntimeError):
            warn(f"skill root {root.path} skipped: it is a broken or looping symbolic link")
            continue
        if root.inside is not None and not canonical_root.is_relative_to(root.inside):
            warn(f"skill root {root.path} skipped: it leads outside the workspace")
            continue
        if not stat.S_ISDIR(info.st_mode):
            continue
        try:
            names = _listing(canonical_root)
        except OSError as err:
            warn(f"skill root {root.path} skipped: it cannot be read ({err.strerror})")
            continue
        for name in names:
            if name.startswith("."):
                continue
            skill = _skill_in(root, canonical_root, (info.st_dev, info.st_ino), name, warn)
            if skill is None or any(other.path == skill.path for other in found.values()):
                continue    # a link to a folder already mapped is the same skill
            if skill.name in found:
                warn(f"skill {skill.name} in {root.path / name} is ignored: {found[skill.name].path} has the same "
                     "name and comes first")
                continue
            if len(found) >= max_skills:
                warn(f"skills: only the first {max_skills} skills are used (skills.max_skills); {root.path / name} "
                     "and any later ones are not")
                return SkillIndex(tuple(found.values()))
            found[skill.name] = skill
    return SkillIndex(tuple(found.values()))


def session_skills(workspace: Path, config, *, project: bool = True, warn: Warn = warn_on_stderr) -> SkillIndex | None:
    """The skills of a session starting now, or None when `[skills] enabled = false`."""
    from scv.config.load import scv_home
    settings = config.skills
    if not settings.enabled:
        return None
    home = os.environ.get("HOME")
    return discover(workspace, scv_home(), Path(home) if home else None, max_skills=settings.max_skills,
                    project=project, warn=warn)
