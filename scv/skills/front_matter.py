"""A skill's front matter: the `---` block at the top of its SKILL.md, as Claude Code and Codex
write it. Only `name` and `description` are read; other keys (license, allowed-tools, metadata
and their nested lines) are passed over. Both must be one-line scalars: plain, 'single-' or
"double-quoted". Anything else is a `FrontMatterError` whose text says what to fix.
"""

import json
import re
from dataclasses import dataclass

NAME = re.compile(r"[a-z0-9-]{1,64}")
MAX_DESCRIPTION = 1024
MAX_HEAD_BYTES = 16 * 1024      # the block must close within this much of the file
_CONTROL = re.compile(r"[\x00-\x1f\x7f\u2028\u2029]")


class FrontMatterError(ValueError):
    pass


@dataclass(frozen=True)
class FrontMatter:
    name: str
    description: str


def _scalar(key: str, raw: str, continued: bool) -> str:
    if raw[:1] in ("|", ">"):
        raise FrontMatterError(f"its {key} is a block of several lines; write it on one line")
    if continued:
        raise FrontMatterError(f"its {key} continues on the next line; write it on one line")
    if raw.startswith('"'):
        try:
            value = json.loads(raw)
        except ValueError:
            raise FrontMatterError(f"its {key} is a double-quoted string that does not close on its line") from None
        if not isinstance(value, str):
            raise FrontMatterError(f"its {key} is not a string")
        return value
    if raw.startswith("'"):
        if len(raw) < 2 or not raw.endswith("'") or "'" in raw[1:-1].replace("''", ""):
            raise FrontMatterError(f"its {key} is a single-quoted string that does not close on its line")
        return raw[1:-1].replace("''", "'")
    comment = raw.find(" #")
    return (raw[:comment] if comment >= 0 else raw).strip()


def parse(head: bytes) -> FrontMatter:
    """The name and description from the first bytes of a SKILL.md."""
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError as err:
        if err.start < len(head) - 3 or len(head) < MAX_HEAD_BYTES:
            raise FrontMatterError("its SKILL.md is not UTF-8 text") from None
        text = head[: err.start].decode("utf-8")    # a character cut by the read
    lines = text.removeprefix("\ufeff").split("\n")
    if not lines or lines[0].rstrip() != "---":
        raise FrontMatterError("its SKILL.md does not start with a front matter block (a line `---`)")
    try:
        end = next(i for i, line in enumerate(lines[1:], 1) if line.rstrip() in ("---", "..."))
    except StopIteration:
        raise FrontMatterError(f"its front matter is not closed by a `---` line within the first "
                               f"{MAX_HEAD_BYTES // 1024} KiB") from None
    block = [line.rstrip("\r") for line in lines[1:end]]
    found: dict[str, str] = {}
    for index, line in enumerate(block):
        if not line.strip() or line.lstrip().startswith("#") or line[0] in " \t":
            continue        # blank, a comment, or a nested line of another key
        key, colon, raw = line.partition(":")
        key = key.strip()
        if not colon:
            raise FrontMatterError(f"line {index + 2} of its front matter is not `key: value`")
        if key not in ("name", "description"):
            continue
        if key in found:
            raise FrontMatterError(f"its front matter sets {key} twice")
        following = block[index + 1] if index + 1 < len(block) else ""
        continued = following[:1] in (" ", "\t") and bool(following.strip())
        raw = raw.strip()
        if not raw:
            raise FrontMatterError(f"its {key} is empty or spread over several lines; write it on one line")
        found[key] = _scalar(key, raw, continued)
    name, description = found.get("name"), found.get("description")
    if name is None or description is None:
        missing = " and ".join(k for k in ("name", "description") if k not in found)
        raise FrontMatterError(f"its front matter has no {missing}")
    if not NAME.fullmatch(name):
        raise FrontMatterError(f"its name {name[:80]!r} is not 1 to 64 of a-z, 0-9 and '-'")
    if not description.strip():
        raise FrontMatterError("its description is empty")
    if _CONTROL.search(description):
        raise FrontMatterError("its description holds a line break or a control character; keep it to one line")
    if len(description) > MAX_DESCRIPTION:
        raise FrontMatterError(f"its description is {len(description)} characters, over {MAX_DESCRIPTION}")
    return FrontMatter(name=name, description=description.strip())
