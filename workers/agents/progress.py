"""A delegated agent's progress lines: redacted, then throttled to two a second by the shared
throttle (scv/core/progress.py). A worker starts no threads, so the held line's timer is the run's
own wake-up: `start_timer` is given by the run (the result-grace token's alarm for a CLI run, the
live conversation's wait for a live one)."""

from scv.core.progress import ProgressThrottle
from workers.agents.redact import redact


class AgentProgress(ProgressThrottle):
    def offer(self, line: str) -> None:
        super().offer(redact(line))
