"""What a short command imports: `scv tool read` loads the read tool and nothing of the agent,
web or job code; `scv --help` lists the commands without importing them; `scv exec` sends its
first model request before the heavy libraries and the deferred start-up work are imported.
Checked in a fresh interpreter that runs the real command, then reports its sys.modules."""

import ast
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import click
import pytest

from scv.cli import COMMAND_HELP, COMMANDS, ScvGroup
from tests.conftest import scv_env
from tests.fake_openai import FakeOpenAI, Reply
from tests.fakes import write_script
from tests.otel_extra import needs_otel

# Runs the CLI's real entry in this fresh process (as `python -m scv` does), and reports the
# modules when it exits, quickly (os._exit) or not.
RUN_AND_REPORT = """
import json, os, sys
report, sys.argv = sys.argv[1], ["scv", *sys.argv[2:]]
def write(code):
    with open(report, "w") as fh:
        json.dump({"code": code, "modules": sorted(sys.modules)}, fh)
exit_now = os._exit
os._exit = lambda code: (write(code), exit_now(code))
from scv.entry import main
try:
    main()
except SystemExit as done:
    write(done.code)
"""


def modules_after(tmp_path, *args: str, cwd, env: dict[str, str] | None = None) -> tuple[int, list[str], str]:
    report = tmp_path / "modules.json"
    proc = subprocess.run([sys.executable, "-c", RUN_AND_REPORT, str(report), *args], cwd=cwd, env=env or scv_env(),
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert report.exists(), proc.stderr
    found = json.loads(report.read_text())
    return found["code"], found["modules"], proc.stdout


# The same, but the modules are reported when the process first connects to the model server
# (an audit hook on socket.connect to its port), i.e. when the first model request goes out.
REPORT_AT_FIRST_REQUEST = """
import sys
port, report, seen = int(sys.argv[1]), sys.argv[2], []
def on_event(event, args):
    if event == "socket.connect" and isinstance(args[1], tuple) and args[1][1:2] == (port,) and not seen:
        seen.append(sorted(sys.modules))
        with open(report, "w") as fh:       # one name a line: the harness itself loads no json
            fh.write("\\n".join(seen[0]))
sys.addaudithook(on_event)
sys.argv = ["scv", *sys.argv[3:]]
from scv.entry import main
main()
"""


def test_exec_sends_the_first_request_before_the_heavy_imports(tmp_path, workspace, scv_home):
    fake = FakeOpenAI()
    try:
        (scv_home / "config.toml").write_text(fake.config("responses"))
        (workspace / "notes.txt").write_text("forty-two\n")
        fake.enqueue(Reply(calls=[("c1", "read", '{"path": "notes.txt"}')]), Reply(text="it says forty-two"))
        report = tmp_path / "modules.json"
        proc = subprocess.run([sys.executable, "-c", REPORT_AT_FIRST_REQUEST, str(fake.server.server_address[1]),
                               str(report), "exec", "what do the notes say?"], cwd=workspace,
                              env=scv_env(SCV_HOME=str(scv_home), FAKE_OPENAI_KEY="sk-test"), capture_output=True,
                              text=True, timeout=120, stdin=subprocess.DEVNULL)
    finally:
        fake.close()
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "it says forty-two\n"      # the tool call ran after the deferred start
    modules = report.read_text().split()
    assert "scv.providers.openai_responses" in modules and "scv.tools.bash" in modules    # the request was built
    heavy = [name for name in modules
             if name.split(".")[0] in ("requests", "urllib3", "chardet", "charset_normalizer", "lxml", "readability",
                                       "ctypes", "workers", "email", "ssl", "click",   # a plain line: no click
                                       "typing_extensions", "inspect")     # msgspec imported alone (scv/entry.py)
             or name in ("http.client", "encodings.idna")          # read the answer; an ASCII host needs no idna
             or name.startswith(("scv.delegations", "scv.tools.web_executor"))
             # What only a call or an offered tool needs: built as Structs, not dataclasses; compression
             # (shutil), json and the sandbox's planning load once the request is out.
             or name in ("dataclasses", "shutil", "json", "traceback", "scv.structured", "scv.sandbox.choose")
             # Tools this session does not offer (no agent installed, no chat): their specs stay out,
             # and so do the conversation and job tables (a job is an agent call).
             or name.startswith(("scv.chat", "scv.tools.agent", "scv.tools.chat_", "scv.tools.read_skill",
                                 "scv.jobs", "scv.agents.conversations", "scv.agents.idle_reaper"))
             # What web_fetch's checks need: loaded by its first call.
             or name in ("scv.core.web.urls", "scv.core.web.addresses")]
    assert heavy == []
    # A regular expression compiled as a module loads costs about 0.1 to 0.25 ms each: the modules
    # loaded by then leave theirs to `re`'s own cache, compiled on first use.
    assert [name for name in modules if name.startswith("scv") and compiles_a_pattern_on_import(source_of(name))] == []


def source_of(module_name: str) -> str:
    return Path(importlib.util.find_spec(module_name).origin).read_text()


def compiles_a_pattern_on_import(source: str) -> bool:
    """Whether the module's top level or a class body calls re.compile."""
    pending = list(ast.parse(source).body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue            # runs when called, not when the module loads
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "compile"
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "re"):
            return True
        pending.extend(ast.iter_child_nodes(node))
    return False


@pytest.mark.parametrize("source, compiles", [
    ("import re\nNAME = re.compile(r'[a-z]+')\n", True),
    ("import re\nRULES = [(re.compile('a'), 'hint')]\n", True),
    ("import re\nclass Names:\n    NAME = re.compile('[a-z]+')\n", True),
    ("import re\nNAME = r'[a-z]+'\ndef ok(name):\n    return re.fullmatch(NAME, name)\n", False),
    ("import re\ndef pattern():\n    return re.compile('[a-z]+')\n", False),
    ("import re\ncheck = lambda name: re.compile('[a-z]+').fullmatch(name)\n", False),
])
def test_the_pattern_check_tells_import_time_from_call_time(source, compiles):
    assert compiles_a_pattern_on_import(source) is compiles


def test_tool_read_imports_no_agent_web_or_job_code(tmp_path, workspace):
    (workspace / "ok.txt").write_text("fine\n")
    code, modules, out = modules_after(tmp_path, "tool", "read", '{"path":"ok.txt"}', cwd=workspace)
    assert code == 0 and json.loads(out)["content"] == "fine\n"
    assert "scv.tools.read" in modules          # the real path ran
    unwanted = [name for name in modules
                if name.split(".")[0] in ("requests", "lxml", "readability", "jsonschema", "click",
                                          "typing_extensions", "inspect")
                or name.startswith(("scv.tools.agent.tool", "scv.tools.web_", "scv.jobs", "scv.agents.session",
                                    "scv.skills.index"))]
    assert unwanted == []


def test_tools_lists_from_the_catalog_without_the_tool_contract(tmp_path, workspace):
    code, modules, out = modules_after(tmp_path, "tools", cwd=workspace)
    assert code == 0 and out.startswith("read ")
    assert "scv.tools.catalog" in modules and "scv.tools.context" in modules        # the real path ran
    assert [name for name in modules if name in ("scv.tools.base", "scv.tools.registry", "scv.core.messages")
            or name.startswith(("scv.tools.read", "scv.tools.bash", "scv.telemetry", "click", "typing_extensions",
                                "inspect"))] == []

def test_help_imports_no_command_module(tmp_path):
    code, modules, out = modules_after(tmp_path, "--help", cwd=tmp_path)
    assert code == 0 and "Run one tool call" in out
    assert [name for name in modules if name.startswith("scv.commands.")
            or name == "scv.plain_argv"] == []       # nor the plain reading (scv/entry.py)
    assert "scv.entry" in modules                                       # the real path ran


def _commands_section(group: click.Group, format_commands) -> str:
    ctx = click.Context(group, info_name="scv")
    formatter = ctx.make_formatter()
    format_commands(group, ctx, formatter)
    return formatter.getvalue()


def test_the_help_table_says_what_each_command_says():
    lazy = ScvGroup(name="scv", lazy=COMMANDS, lazy_help=COMMAND_HELP)
    listed = _commands_section(lazy, ScvGroup.format_commands)
    assert lazy.commands == {}      # listed without loading one
    loaded = ScvGroup(name="scv", lazy=COMMANDS)
    assert listed == _commands_section(loaded, click.Group.format_commands)
    assert set(COMMAND_HELP) == set(COMMANDS)


def test_exec_without_a_schema_never_imports_jsonschema(tmp_path, workspace):
    script = tmp_path / "s.jsonl"
    script.write_text('{"text": "done"}\n')
    code, modules, out = modules_after(tmp_path, "exec", "go", "--script", str(script), cwd=workspace)
    assert code == 0 and out == "done\n"
    assert [name for name in modules if name.split(".")[0] in ("jsonschema", "referencing")] == []
    schema = tmp_path / "schema.json"
    schema.write_text('{"type": "string"}')
    script.write_text('{"text": "done"}\n{"text": "\\"done\\""}\n')      # prose, then repaired
    code, modules, out = modules_after(tmp_path, "exec", "go", "--script", str(script), "--output-schema",
                                       str(schema), cwd=workspace)
    assert code == 0 and out == '"done"\n'
    assert "jsonschema" in modules        # the check above looks for the right name


def _otel_env(**variables: str) -> dict[str, str]:
    env = {name: value for name, value in scv_env().items() if not name.startswith("OTEL_")}
    env.update(variables, TRACEPARENT="00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
    return env


# A port nothing listens on: a traced run's spans are refused and dropped, which is all right here.
CLOSED = "http://127.0.0.1:9"


@pytest.mark.parametrize("variables", [
    {},                                                                     # nothing asks for traces
    {"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": CLOSED},   # disabled wins
    {"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": CLOSED},
    {"OTEL_SERVICE_NAME": "named-only"},                                    # only names the service
    {"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_ENDPOINT": CLOSED},
], ids=["unset", "sdk-disabled", "exporter-none", "service-name-only", "grpc"])
def test_exec_untraced_imports_no_opentelemetry(tmp_path, workspace, variables):
    script = write_script(tmp_path / "s.jsonl", {"calls": [{"tool": "bash", "args": {"command": "true"}}]},
                          {"text": "done"})
    code, modules, out = modules_after(tmp_path, "exec", "--script", str(script), "--auto-approve", cwd=workspace,
                                       env=_otel_env(**variables))
    assert code == 0 and out.strip() == "done"
    assert "scv.session.turn_loop" in modules       # the real path ran
    assert [name for name in modules if name.startswith(("opentelemetry", "scv.telemetry.otel", "google"))] == []


@pytest.mark.parametrize("variables", [{}, {"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": CLOSED}],
                         ids=["unset", "sdk-disabled"])
def test_tool_untraced_imports_no_opentelemetry(tmp_path, workspace, variables):
    code, modules, out = modules_after(tmp_path, "tool", "bash", '{"command":"echo ran"}', "--auto-approve",
                                       cwd=workspace, env=_otel_env(**variables))
    assert code == 0 and json.loads(out)["output"] == "ran\n"
    assert "scv.commands.tool_call" in modules       # the real path ran
    assert [name for name in modules if name.startswith(("opentelemetry", "scv.telemetry.otel", "google"))] == []


@needs_otel
def test_tool_traced_imports_opentelemetry(tmp_path, workspace):
    code, modules, out = modules_after(tmp_path, "tool", "bash", '{"command":"echo ran"}', "--auto-approve",
                                       cwd=workspace, env=_otel_env(OTEL_EXPORTER_OTLP_ENDPOINT=CLOSED))
    assert code == 0 and json.loads(out)["output"] == "ran\n"
    assert "scv.telemetry.otel" in modules


@needs_otel
def test_exec_traced_imports_opentelemetry(tmp_path, workspace):
    """The other side of the test above: the same run with an endpoint loads the exporter."""
    script = write_script(tmp_path / "s.jsonl", {"text": "done"})
    code, modules, out = modules_after(tmp_path, "exec", "--script", str(script), cwd=workspace,
                                       env=_otel_env(OTEL_EXPORTER_OTLP_ENDPOINT=CLOSED))
    assert code == 0 and out.strip() == "done"
    assert "scv.telemetry.otel" in modules and "opentelemetry.sdk.trace" in modules


MSGSPEC_ALONE = """
import sys
from scv.entry import import_msgspec_alone
import_msgspec_alone()
assert "msgspec" in sys.modules and "typing_extensions" not in sys.modules
import typing
import msgspec
import typing_extensions        # what the OpenTelemetry extra imports later
class Plain(typing.TypedDict):
    a: int
    b: typing.NotRequired[int]
class Extended(typing_extensions.TypedDict):
    a: int
    b: typing_extensions.NotRequired[int]
for kind in (Plain, Extended):
    print(msgspec.json.decode(b'{"a": 1}', type=kind), end=" ")
    try:
        msgspec.json.decode(b'{"b": 1}', type=kind)
    except msgspec.ValidationError as err:
        print(err)
"""


def test_msgspec_imported_alone_still_reads_typed_dicts_and_leaves_typing_extensions_importable():
    pytest.importorskip("typing_extensions")
    proc = subprocess.run([sys.executable, "-c", MSGSPEC_ALONE], env=scv_env(), capture_output=True, text=True, timeout=60)
    assert (proc.returncode, proc.stderr) == (0, "")
    assert proc.stdout.splitlines() == ["{'a': 1} Object missing required field `a`"] * 2
