"""A batch's results for people and CI: counts by status and agent, usage totals, the slowest
tasks and every failure (with its error, check and branch) as Markdown, and JUnit XML with one
test case per task, which GitHub, GitLab and Jenkins show as a test report.

In JUnit, `failed`, `schema_invalid` and `limit` (and the agent's own `declined` and `timeout`)
are failures; `cancelled`, `lost` and `quota` are errors; tasks of the task file that have no
result line (never started) are skipped."""

import os
import tempfile
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import msgspec

from scv.batch.results import COMPLETED
from scv.core.errors import UsageError

ERRORS = ("cancelled", "lost", "quota")
SLOWEST = 5
OUTPUT_TAIL_IN_REPORT = 2048


def read(path: Path) -> list[dict[str, Any]]:
    """The result lines of an output file; a line cut short by a crash (the last) is left out."""
    try:
        data = path.read_bytes()
    except OSError as err:
        raise UsageError(f"the results file {path} cannot be read ({err.strerror}); name scv batch's --output "
                         "file") from None
    found, lines = [], data.split(b"\n")
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            value = msgspec.json.decode(raw)
        except msgspec.DecodeError:
            if number == len(lines):
                continue
            value = None
        if not isinstance(value, dict) or not isinstance(value.get("id"), str):
            raise UsageError(f"{path} line {number} is not a batch result; name scv batch's --output file")
        found.append(value)
    return found


def _status(line: dict[str, Any]) -> str:
    return str(line.get("status") or "failed")


def _failed_check(line: dict[str, Any]) -> dict[str, Any] | None:
    checks = line.get("verify")
    if isinstance(checks, list):
        return next((c for c in checks if isinstance(c, dict) and c.get("exit_code") != 0), None)
    return None


def _usage(lines: list[dict[str, Any]]) -> dict[str, dict[str, float | None]]:
    """Agent -> summed numeric usage fields (tokens, cost) of its tasks. As in the usage ledger, a
    cost is known only when every task's is: one task of unknown cost makes its agent's null."""
    totals: dict[str, dict[str, float | None]] = {}
    unknown_cost: set[str] = set()
    for line in lines:
        usage = line.get("usage")
        if not isinstance(usage, dict):
            continue
        agent = str(line.get("agent"))
        mine = totals.setdefault(agent, {})
        for key, value in usage.items():
            if _number(value):
                mine[key] = (mine.get(key) or 0) + value
        if not _number(usage.get("cost_usd")):
            unknown_cost.add(agent)
    for agent in unknown_cost:
        if "cost_usd" in totals[agent]:
            totals[agent]["cost_usd"] = None
    return totals


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def summary(lines: list[dict[str, Any]], not_started: list[str] = ()) -> dict[str, Any]:
    by_status: dict[str, int] = {}
    by_agent: dict[str, dict[str, int]] = {}
    for line in lines:
        status, agent = _status(line), str(line.get("agent"))
        by_status[status] = by_status.get(status, 0) + 1
        by_agent.setdefault(agent, {})[status] = by_agent.setdefault(agent, {}).get(status, 0) + 1
    slowest = sorted(lines, key=lambda line: -float(line.get("elapsed_seconds") or 0))[:SLOWEST]
    failures = []
    for line in lines:
        if _status(line) == COMPLETED:
            continue
        check = _failed_check(line)
        failures.append({"id": line["id"], "agent": line.get("agent"), "status": _status(line),
                         "error": line.get("error"), "check": check.get("command") if check else None,
                         "branch": line.get("branch")})
    return {"tasks": len(lines) + len(not_started), "by_status": by_status, "by_agent": by_agent,
            "not_started": list(not_started), "usage": _usage(lines),
            "slowest": [{"id": line["id"], "elapsed_seconds": line.get("elapsed_seconds")} for line in slowest],
            "failures": failures}


def _cell(text: Any) -> str:
    return str(text if text is not None else "").replace("|", "\\|").replace("\n", " ")


def markdown(lines: list[dict[str, Any]], not_started: list[str] = ()) -> str:
    facts = summary(lines, not_started)
    out = ["# scv batch report", "",
           f"{facts['tasks']} task(s): " + ", ".join(f"{count} {status}" for status, count in
                                                      sorted(facts["by_status"].items()))
           + (f", {len(facts['not_started'])} not started" if facts["not_started"] else ""), "",
           "| agent | " + " | ".join(sorted(facts["by_status"])) + " |",
           "|---" * (len(facts["by_status"]) + 1) + "|"]
    for agent, counts in sorted(facts["by_agent"].items()):
        out.append(f"| {_cell(agent)} | " + " | ".join(str(counts.get(s, 0)) for s in sorted(facts["by_status"])) + " |")
    if facts["usage"]:
        out += ["", "## Usage", ""]
        for agent, usage in sorted(facts["usage"].items()):
            out.append(f"- {agent}: " + ", ".join(f"{key} {'unknown' if value is None else format(value, 'g')}"
                                                  for key, value in sorted(usage.items())))
    out += ["", "## Slowest tasks", ""]
    out += [f"- {_cell(item['id'])}: {item['elapsed_seconds']} s" for item in facts["slowest"]]
    if facts["failures"]:
        out += ["", "## Failures", "", "| task | agent | status | error | check | branch |",
                "|---|---|---|---|---|---|"]
        for item in facts["failures"]:
            out.append("| " + " | ".join(_cell(item[key]) for key in ("id", "agent", "status", "error", "check",
                                                                          "branch")) + " |")
    return "\n".join(out) + "\n"


def junit(lines: list[dict[str, Any]], not_started: list[str] = ()) -> bytes:
    suite = ElementTree.Element("testsuite", name="scv batch")
    counts = {"failures": 0, "errors": 0, "skipped": 0}
    total_time = 0.0
    for line in lines:
        status, agent = _status(line), str(line.get("agent") or "none")
        elapsed = float(line.get("elapsed_seconds") or 0)
        total_time += elapsed
        case = ElementTree.SubElement(suite, "testcase", name=line["id"], classname=f"scv.batch.{agent}",
                                      time=f"{elapsed:.2f}")
        if status == COMPLETED:
            continue
        kind = "error" if status in ERRORS else "failure"
        counts["errors" if kind == "error" else "failures"] += 1
        message = f"{status}: {line.get('error') or 'no error was given'}"
        element = ElementTree.SubElement(case, kind, message=message, type=status)
        check = _failed_check(line)
        details = [message]
        if check is not None:
            details.append(f"check `{check.get('command')}` exited {check.get('exit_code')}:\n"
                           f"{str(check.get('output_tail') or '')[-OUTPUT_TAIL_IN_REPORT:]}")
        if line.get("branch"):
            details.append(f"branch {line['branch']} at {line.get('commit')}")
        element.text = "\n".join(details)
    for task_id in not_started:
        case = ElementTree.SubElement(suite, "testcase", name=task_id, classname="scv.batch.not_started", time="0")
        ElementTree.SubElement(case, "skipped", message="the task did not start")
        counts["skipped"] += 1
    suite.set("tests", str(len(lines) + len(not_started)))
    for key, value in counts.items():
        suite.set(key, str(value))
    suite.set("time", f"{total_time:.2f}")
    root = ElementTree.Element("testsuites")
    root.append(suite)
    return ElementTree.tostring(root, encoding="utf-8", xml_declaration=True) + b"\n"


def write_file(path: Path, data: bytes) -> None:
    """Replaces `path` whole (a temporary file renamed over it), so a reader never sees half a report."""
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent if str(path.parent) else ".", prefix=f".{path.name}.")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError as err:
        raise UsageError(f"the report {path} cannot be written ({err.strerror}); name another file") from None
