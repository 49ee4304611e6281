"""`scv config show`: the effective configuration with each value's source, secrets as `…`, and
the recorded agent imports compared with their sources (logic in scv/config/view.py)."""

import sys

import click
import msgspec

from scv.agents.import_checks import import_states
from scv.commands.options import workspace_option
from scv.config.load import scv_home
from scv.config.view import effective_config, render_settings
from scv.sandbox.report import sandbox_section
from scv.session.context import resolve_workspace


@click.group("config")
def config_command() -> None:
    """The configuration SCV uses: $SCV_HOME/config.toml and the workspace's .scv/config.toml."""


@config_command.command("show")
@workspace_option
@click.option("--json", "as_json", is_flag=True,
              help='Print {"files", "config", "settings": [{"key", "value", "source"}], "imports", "sandbox"} '
                   'as JSON.')
def show_command(workspace: str | None, as_json: bool) -> None:
    """The effective configuration for a workspace: every key, its value and where it came from
    (default, user file or project file), with secrets shown as …; then each recorded
    `scv agents import`, up to date or with the command to run again, and the sandbox's mode with
    what this kernel supports (scv sandbox check tells more)."""
    view = effective_config(resolve_workspace(workspace))
    imports = import_states(scv_home())
    sandbox = sandbox_section(view.config)
    if as_json:
        value = {"files": {"user": view.user_file.as_dict(), "project": view.project_file.as_dict()},
                 "config": view.nested(),
                 "settings": [{"key": s.key, "value": s.value, "source": s.source} for s in view.settings],
                 "imports": [{"agent": agent, "source": state.source, "up_to_date": state.up_to_date,
                              "detail": state.detail} for agent, state in imports.items()],
                 "sandbox": sandbox}
        sys.stdout.buffer.write(msgspec.json.encode(value) + b"\n")
        return
    for label, found in (("user file", view.user_file), ("project file", view.project_file)):
        click.echo(f"# {label}: {found.path}{'' if found.exists else ' (none)'}")
    for line in render_settings(view.settings):
        click.echo(line)
    kernel = sandbox["kernel"]
    supported = [f"Landlock ABI {kernel['landlock_abi']}"] + [
        f"{what} namespaces {'yes' if kernel[key] else 'no'}"
        for what, key in (("user", "user_namespace"), ("mount", "mount_namespace"), ("network", "network_namespace"))]
    click.echo(f"# sandbox: {sandbox['mode']}, network {'on' if sandbox['network'] else 'off'}; this kernel: "
               f"{', '.join(supported)} (scv sandbox check)")
    click.echo("")
    if not imports:
        click.echo("# imports: none recorded (scv agents import)")
    for agent, state in imports.items():
        click.echo(f"# import {agent} from {state.source}: {state.detail}")
