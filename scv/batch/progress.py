"""What `scv batch` shows on stderr while it runs, the same for every engine.

On a terminal: one live line (done, running, failed, lost, elapsed, rate) with the latest
progress line of each running task above it, redrawn at most 5 times a second; tasks that end
other than completed leave a line above it. Not a terminal (a log, CI): a line per task event,
`t3@node-2: ...`, each task's progress at most once per 2 s, and the tally line after each
finished task. `--quiet`: the final tally only."""

import shutil
import time
from dataclasses import dataclass, field
from typing import Callable, TextIO

from scv.batch.engine import Node

REDRAW_SECONDS = 0.2
EVENT_LINE_SECONDS = 2.0
MAX_TEXT = 200


@dataclass
class Tally:
    total: int
    skipped: int = 0
    done: int = 0
    failed: int = 0
    lost: int = 0
    running: int = 0
    started_at: float = field(default_factory=time.monotonic)
    spent: str = ""             # the batch's usage total, when it counts one (scv/batch/limits.py)

    def elapsed(self) -> float:
        return time.monotonic() - self.started_at

    def line(self, over: bool = False) -> str:
        """The tally; `over` for the final one, whose rate is the real one however short the batch was
        (while it runs, the first second shows none: a rate out of a moment's work says nothing)."""
        elapsed = self.elapsed()
        finished_here = self.done + self.failed + self.lost
        rate = finished_here / elapsed if elapsed >= 1.0 or (over and elapsed > 0) else 0.0
        return (f"scv batch: {self.done + self.skipped}/{self.total} done, {self.running} running, {self.failed} "
                f"failed, {self.lost} lost, {elapsed:.1f} s, {rate:.2f} tasks/s" + (f"; {self.spent}" if self.spent else ""))


def _who(task_id: str, node: Node | None) -> str:
    return f"{task_id}@{node.label()}" if node is not None else task_id


def _short(text: str, width: int = MAX_TEXT) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[:max(1, width - 1)] + "…"


class Display:
    """The quiet display, and the interface of the others: only the final tally is printed."""

    def __init__(self, out: TextIO, clock: Callable[[], float] = time.monotonic):
        self.out = out
        self.clock = clock

    def _print(self, line: str) -> None:
        self.out.write(line + "\n")
        self.out.flush()

    def note(self, text: str) -> None:
        pass

    def started(self, task_id: str, attempt: int, node: Node) -> None:
        pass

    def progress(self, task_id: str, node: Node | None, text: str) -> None:
        pass

    def finished(self, task_id: str, status: str, node: Node | None, tally: Tally) -> None:
        pass

    def tick(self, tally: Tally) -> None:
        """Called from the runner's loop several times a second."""

    def final(self, line: str) -> None:
        self._print(line)

    def warn(self, line: str) -> None:
        """A line every display prints, the quiet one too (a node's telemetry that failed)."""
        self._print(line)


class EventLines(Display):
    """A line per task event, for logs: nothing is redrawn."""

    def __init__(self, out: TextIO, clock: Callable[[], float] = time.monotonic):
        super().__init__(out, clock)
        self._last: dict[str, float] = {}

    def note(self, text: str) -> None:
        self._print(f"scv batch: {text}")

    def started(self, task_id: str, attempt: int, node: Node) -> None:
        again = f" (attempt {attempt})" if attempt > 1 else ""
        self._print(f"{_who(task_id, node)}: started{again}")

    def progress(self, task_id: str, node: Node | None, text: str) -> None:
        now = self.clock()
        last = self._last.get(task_id)
        if last is not None and now - last < EVENT_LINE_SECONDS:
            return
        self._last[task_id] = now
        self._print(f"{_who(task_id, node)}: {_short(text)}")

    def finished(self, task_id: str, status: str, node: Node | None, tally: Tally) -> None:
        self._last.pop(task_id, None)
        self._print(f"{tally.line()} ({task_id}: {status})")


class LiveLine(Display):
    """A terminal: the running tasks' latest lines and the tally, redrawn in place."""

    def __init__(self, out: TextIO, clock: Callable[[], float] = time.monotonic):
        super().__init__(out, clock)
        self._latest: dict[str, str] = {}
        self._drawn = 0             # lines of the block on screen now
        self._drawn_at = float("-inf")
        self._dirty = True

    def _erase(self) -> None:
        if self._drawn:
            # Up to the first line of the block, then clear to the end of the screen.
            self.out.write(f"\x1b[{self._drawn}F\x1b[J")
            self._drawn = 0

    def _above(self, line: str) -> None:
        self._erase()
        self._print(line)
        self._dirty = True

    def note(self, text: str) -> None:
        self._above(f"scv batch: {text}")

    def warn(self, line: str) -> None:
        self._above(line)

    def started(self, task_id: str, attempt: int, node: Node) -> None:
        self._latest[task_id] = f"{_who(task_id, node)}: started" + (f" (attempt {attempt})" if attempt > 1 else "")
        self._dirty = True

    def progress(self, task_id: str, node: Node | None, text: str) -> None:
        self._latest[task_id] = f"{_who(task_id, node)}: {text}"
        self._dirty = True

    def finished(self, task_id: str, status: str, node: Node | None, tally: Tally) -> None:
        self._latest.pop(task_id, None)
        if status != "completed":
            self._above(f"{_who(task_id, node)}: {status}")
        self._dirty = True

    def tick(self, tally: Tally) -> None:
        now = self.clock()
        if now - self._drawn_at < REDRAW_SECONDS:
            return
        if not self._dirty and now - self._drawn_at < 1.0:     # the elapsed time still moves once a second
            return
        size = shutil.get_terminal_size((100, 24))
        width = max(20, size.columns - 1)
        shown = list(self._latest.values())[:max(0, size.lines - 3)]
        hidden = len(self._latest) - len(shown)
        lines = ["  " + _short(text, width - 2) for text in shown]
        if hidden:
            lines.append(f"  ... and {hidden} more running")
        lines.append(_short(tally.line(), width))
        self._erase()
        self.out.write("".join(line + "\n" for line in lines))
        self.out.flush()
        self._drawn = len(lines)
        self._drawn_at = now
        self._dirty = False

    def final(self, line: str) -> None:
        self._erase()
        self._print(line)


def choose(out: TextIO, quiet: bool) -> Display:
    if quiet:
        return Display(out)
    try:
        terminal = out.isatty()
    except (AttributeError, ValueError):
        terminal = False
    return LiveLine(out) if terminal else EventLines(out)
