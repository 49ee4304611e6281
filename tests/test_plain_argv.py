"""scv/plain_argv.py reads `scv exec` and `scv tool` lines without click: every line it
reads, click reads alike (same parameters, same values); every line click refuses, it leaves to
click; and the lines scripts write are read by it, not left to click."""

from pathlib import Path

import click
import pytest
from hypothesis import example, given, settings, strategies as st

from scv.commands.exec import exec_command
from scv.commands.exec_run import SIGNATURE as EXEC_SIGNATURE
from scv.plain_argv import read
from scv.commands.tool import tool_command
from scv.commands.tool_run import SIGNATURE as TOOL_SIGNATURE
from scv.commands.tools import tools_command
from scv.commands.tools_run import SIGNATURE as TOOLS_SIGNATURE

COMMANDS = {"exec": (exec_command, EXEC_SIGNATURE), "tool": (tool_command, TOOL_SIGNATURE),
            "tools": (tools_command, TOOLS_SIGNATURE)}


def click_reads(command: click.Command, argv: list[str]):
    """The parameters click gives the command's function, or None where click refuses the line
    (or answers it itself: --help)."""
    try:
        with command.make_context(command.name, list(argv)) as ctx:
            return ctx.params
    except (click.exceptions.ClickException, click.exceptions.Exit):
        return None


@pytest.fixture
def in_files(tmp_path, monkeypatch):
    """A folder with a readable file, an unreadable one and a subfolder, as relative paths."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "file.jsonl").write_text("{}\n")
    (tmp_path / "folder").mkdir()
    (tmp_path / "locked.json").write_text("{}")
    (tmp_path / "locked.json").chmod(0)
    return tmp_path


@pytest.mark.parametrize("name", COMMANDS)
def test_the_signature_is_the_click_commands(name):
    command, signature = COMMANDS[name]
    arguments = tuple(p.name for p in command.params if isinstance(p, click.Argument))
    assert signature.arguments == arguments
    assert signature.required == sum(p.required for p in command.params if isinstance(p, click.Argument))
    options = {p.name: p for p in command.params if isinstance(p, click.Option)}
    assert {o.name for o in signature.options} == set(options)
    for option in signature.options:
        assert set(option.flags) == set(options[option.name].opts) | set(options[option.name].secondary_opts)
        assert (option.convert is None) == options[option.name].is_flag


PLAIN_LINES = [
    ("exec", ["say hello"]),
    ("exec", ["-", "--json"]),
    ("exec", ["--script", "file.jsonl", "--auto-approve"]),
    ("exec", ["--script", "missing.jsonl"]),
    ("exec", ["fix it", "--timeout", "30", "--max-turns", "5", "--max-tokens", "20000", "--max-cost-usd", "0.5",
              "-C", "folder", "--model", "gpt-5", "--output-schema", "file.jsonl", "--mcp-config", "file.jsonl"]),
    ("exec", ["--timeout=2.5", "--workspace=folder", "go"]),
    ("exec", [""]),
    ("exec", []),
    ("tool", ["read", '{"path":"ok.txt"}']),
    ("tool", ["bash", '{"command":"true"}', "--auto-approve", "-C", "folder"]),
    ("tool", ["read"]),
    ("tools", []),
    ("tools", ["--json", "-C", "folder"]),
]


@pytest.mark.parametrize("name,argv", PLAIN_LINES)
def test_the_lines_scripts_write_are_read_plainly_as_click_reads_them(in_files, name, argv):
    command, signature = COMMANDS[name]
    values = read(argv, signature)
    assert values is not None
    assert values == click_reads(command, argv)


LEFT_TO_CLICK = [
    ("exec", ["--help"]),
    ("exec", ["-h"]),
    ("exec", ["--", "go"]),
    ("exec", ["go", "again"]),              # an extra argument
    ("exec", ["go", "--nope"]),
    ("exec", ["--timeout", "0"]),           # out of range
    ("exec", ["--timeout", "inf"]),         # click takes it; not a plain number
    ("exec", ["--max-turns", "+3"]),
    ("exec", ["--max-turns", "1_0"]),
    ("exec", ["--timeout"]),                # no value
    ("exec", ["--json=yes", "go"]),
    ("exec", ["--json", "--json", "go"]),   # repeated
    ("exec", ["--model", "-x", "go"]),
    ("exec", ["-Cfolder", "go"]),           # joined short option
    ("exec", ["--script", "folder"]),       # a folder (click: "is a directory")
    ("exec", ["--script", ""]),
    ("exec", ["-x"]),
    ("tool", []),                           # the tool's name is required
    ("tool", ["read", "{}", "extra"]),
    ("tools", ["read"]),
]


@pytest.mark.parametrize("name,argv", LEFT_TO_CLICK)
def test_what_the_plain_reading_might_read_otherwise_is_left_to_click(in_files, name, argv):
    assert read(argv, COMMANDS[name][1]) is None


def _tokens(signature):
    flags = [flag for option in signature.options for flag in option.flags]
    values = ["0", "1", "3", "2.5", ".5", "5.", "-1", "1e3", "inf", "nan", "abc", "", "-", "--", " 2", "+2",
              "file.jsonl", "folder", "locked.json", "missing.json", "--help", "-h", "say hi", "{}"]
    joined = st.builds(lambda flag, value: f"{flag}={value}", st.sampled_from([f for f in flags if f.startswith("--")]),
                       st.sampled_from(values))
    return st.lists(st.one_of(st.sampled_from(flags), st.sampled_from(values), joined, st.text(max_size=4)),
                    max_size=8)


@pytest.mark.parametrize("name", COMMANDS)
def test_any_line_read_plainly_is_read_alike_by_click(in_files, name):
    command, signature = COMMANDS[name]

    @settings(max_examples=400, deadline=None)
    @given(_tokens(signature))
    @example(["--timeout", "5.", "go"])
    @example(["--max-cost-usd", ".5", "go"])
    @example(["--script", "\x00"])          # hypothesis found it: a NUL is no path os.stat takes
    def check(argv):
        values = read(argv, signature)
        if values is not None:
            assert values == click_reads(command, argv), argv

    check()


def test_a_path_is_a_path_as_click_gives_it(in_files):
    values = read(["--script", "file.jsonl", "go"], EXEC_SIGNATURE)
    assert values["script"] == Path("file.jsonl") and values["prompt"] == "go"
