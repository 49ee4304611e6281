"""The prompt of a report turn: the session starts it itself, once idle, for jobs whose results
the model has not seen, at most MAX_JOBS_PER_TURN a turn."""

from typing import Any

from scv.jobs.job import Job

PREFIX = "[SCV background report]"
MAX_JOBS_PER_TURN = 4
MAX_REPLY_CHARS = 16000


def _bounded(text: str, limit: int = MAX_REPLY_CHARS) -> str:
    return text if len(text) <= limit else text[:limit] + f"… [{len(text) - limit} more characters cut]"


def prompt(jobs: list[Job]) -> str:
    parts = [f"{PREFIX} {len(jobs)} background job(s) you started have finished and you have not seen their "
             "results yet. Tell the user what each one found or did, in a few sentences, and mention anything "
             "that failed or needs their decision."]
    for job in jobs:
        result = job.result or {}
        conversation = result.get("session") or job.conversation
        head = f"\n{job.id}: agent {job.agent}"
        if conversation:
            head += f", conversation {conversation} (pass it as session to continue)"
        head += f", status {job.status}, after {job.elapsed()} s"
        parts.append(head)
        if result.get("error"):
            parts.append(f"Error: {_bounded(str(result['error']), 2000)}")
        reply = result.get("reply")
        parts.append(f"Reply:\n{_bounded(reply)}" if reply else "Reply: (none)")
    return "\n".join(parts)


def origin(jobs: list[Job]) -> dict[str, Any]:
    return {"kind": "background", "jobs": [{"job": j.id, "agent": j.agent, "status": j.status} for j in jobs]}
