"""`scv batch-report RESULTS`: a batch's results file as Markdown and JUnit XML (scv/batch/report.py).
A command of its own, not `scv batch report`, so a task file named `report` is never taken for it."""

import json
import sys
from pathlib import Path

import click

from scv.batch import report as reports
from scv.core.errors import ScvError, UsageError


def _task_ids(path: Path) -> list[str]:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as err:
        raise UsageError(f"the batch file {path} cannot be read ({err.strerror}); name the file given to scv "
                         "batch") from None
    ids = []
    for line in text.splitlines():
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict) and isinstance(value.get("id"), str):
            ids.append(value["id"])
    return ids


@click.command("batch-report")
@click.argument("results", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--tasks", "tasks_file", type=click.Path(dir_okay=False, path_type=Path), default=None, metavar="FILE",
              help="The batch file: its tasks without a result are reported as not started (JUnit: skipped).")
@click.option("--junit", type=click.Path(dir_okay=False, path_type=Path), default=None, metavar="FILE",
              help="Write JUnit XML here: one test case per task.")
@click.option("--markdown", type=click.Path(dir_okay=False, path_type=Path), default=None, metavar="FILE",
              help="Write the Markdown report here (default: print it, unless --junit or --json is given).")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as one JSON object.")
def batch_report_command(results: Path, tasks_file: Path | None, junit: Path | None, markdown: Path | None,
                         as_json: bool) -> None:
    """Summarise scv batch's results file for people (Markdown) and CI (JUnit XML).

    Counts by status and agent, usage totals, the slowest tasks, and every failure with its
    error, check and branch. Exits 0 when the report was written, whatever the tasks' statuses.
    """
    try:
        lines = reports.read(results)
        done = {line["id"] for line in lines}
        not_started = [i for i in _task_ids(tasks_file) if i not in done] if tasks_file is not None else []
        if junit is not None:
            reports.write_file(junit, reports.junit(lines, not_started))
        if markdown is not None:
            reports.write_file(markdown, reports.markdown(lines, not_started).encode())
        if as_json:
            click.echo(json.dumps(reports.summary(lines, not_started)))
        elif junit is None and markdown is None:
            click.echo(reports.markdown(lines, not_started), nl=False)
    except ScvError as err:
        click.echo(f"scv: {err}", err=True)
        sys.exit(err.exit_code)
