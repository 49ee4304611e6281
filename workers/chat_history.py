"""Executor of `chat_history`: one conversation's log through `scv.core.chat.history`, and the
result kept within the output limit by dropping list entries from its end (with `more`)."""

from datetime import date
from typing import Any

import msgspec

from scv.core.chat.history import Files, Log, episodes, read, search
from workers.runtime import ToolFailure, WorkerContext


def fit(result: dict[str, Any], key: str, limit: int) -> dict[str, Any]:
    """Drops entries of `result[key]` from the end until the JSON fits in `limit` bytes."""
    entries = result[key]
    if len(msgspec.json.encode(result)) <= limit:
        return result
    low, high = 0, len(entries)     # the most entries that fit lies in [low, high)
    while low + 1 < high:
        middle = (low + high) // 2
        trial = {**result, key: entries[:middle], "more": True}
        if len(msgspec.json.encode(trial)) <= limit:
            low = middle
        else:
            high = middle
    return {**result, key: entries[:low], "more": True}


def _date(value: str | None) -> date | None:
    return None if value is None else date.fromisoformat(value)


def execute(args: dict, ctx: WorkerContext) -> dict:
    log = Log(args["log"])
    budget = [args["byte_cap"]]
    limit, output_limit = args["limit"], args["output_limit"]
    try:
        action = args["action"]
        if action == "search":
            hits, more = search(log, args["query"], limit, budget)
            result = {"action": "search", "query": args["query"], "results": hits, "more": more}
            return fit(result, "results", output_limit)
        if action == "episodes":
            listed, more = episodes(log, _date(args["before"]), _date(args["after"]), limit, budget)
            return fit({"action": "episodes", "episodes": listed, "more": more}, "episodes", output_limit)
        shown = read(log, args["episode"], args["offset"], limit, Files.of(args["log"], args["media"]))
        if shown is None:
            raise ToolFailure(f"this chat has no episode {args['episode']}; list them with action episodes")
        shown = fit({"action": "read", **shown}, "messages", output_limit)
        shown["more"] = shown["offset"] + len(shown["messages"]) < shown["total"]
        if shown["more"]:
            shown["next_offset"] = shown["offset"] + len(shown["messages"])
        return shown
    finally:
        log.close()
