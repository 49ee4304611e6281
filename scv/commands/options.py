"""Options several commands share, in a module that loads nothing else: a command declares them
before it loads what it runs."""

import click

workspace_option = click.option("-C", "--workspace", "workspace", metavar="DIR", default=None,
                                help="The workspace (default: the current directory).")
