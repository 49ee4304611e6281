"""What both engines' drivers share: the result sink over an earlier run's output (resume), and
running the batch in the main thread with SIGINT and SIGTERM stopping it."""

import sys
from pathlib import Path

from scv.batch import results, tasks
from scv.batch.runner import BatchRunner
from scv.core.errors import EXIT_FAILED, EXIT_OK
from scv.core.signals import on_stop_signals


def open_output(output: Path | None, batch: list[tasks.Task], rerun: frozenset[str] | None = None):
    """The result sink, the tasks still to run, and how many an earlier run settled."""
    kept = results.completed_lines(output, rerun) if output is not None else {}
    todo = [task for task in batch if task.id not in kept]
    sink = results.ResultSink(output, sys.stdout.buffer)
    sink.open(kept)
    return sink, todo, len(batch) - len(todo)


def drive(runner: BatchRunner, sink: results.ResultSink) -> int:
    """Runs the batch in this (the main) thread: SIGINT and SIGTERM stop it."""
    if runner.tally.skipped:
        runner.display.note(f"{runner.tally.skipped} task(s) already completed in {sink.path}; running "
                            f"{len(runner.tasks)}")
    try:
        with on_stop_signals(runner.stop):
            code = runner.run()
    finally:
        sink.close()
    if code == EXIT_OK and any(line.get("status") != results.COMPLETED for line in sink.written):
        code = EXIT_FAILED      # a task --rerun left as an earlier run ended it
    return code
