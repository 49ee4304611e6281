"""What every delegated agent process starts with, whichever way it runs (the CLI once per turn,
or a live server for the whole conversation): its folder inside the workspace, and its private
home and scrubbed environment tagged with the `SCV_PARENT` link, with the record that the fork
point's keeper writes for the run in the calling session's `SCV_HOME`."""

import os
from pathlib import Path
from typing import Any

from scv.core import lineage, traceparent
from scv.core.agents.descriptors import Descriptor
from scv.core.agents.environment import build_environment, prepare_home
from workers.agents import tracking
from workers.delegation_records import RecordKeeper
from workers.runtime import WorkerContext


def resolve_cwd(workspace: str, requested: str | None) -> str:
    """The run's directory: the workspace, or `requested` resolved (symlinks followed) to an
    existing directory inside it. Raises ValueError with the sentence to show."""
    root = os.path.realpath(workspace)
    if not requested:
        return root
    target = os.path.realpath(os.path.join(root, requested))
    if target != root and not target.startswith(root + os.sep):
        raise ValueError(f"agent cwd {requested!r} resolves outside the workspace; pass a directory inside it")
    if not os.path.isdir(target):
        raise ValueError(f"agent cwd {requested!r} is not an existing directory in the workspace; create it or "
                         "pass another")
    return target


def delegated_environment(args: dict[str, Any], ctx: WorkerContext, descriptor: Descriptor, cwd: str
                          ) -> tuple[dict[str, str], tracking.DelegatedRun, RecordKeeper]:
    """The agent's environment, the run its record describes, and the keeper of that record (in
    the calling session's SCV_HOME), its home prepared."""
    scv_home = Path(ctx.options["scv_home"])
    prepare_home(scv_home, descriptor)
    instance = ctx.call.handle.split("/", 1)[0]
    parent = lineage.link(instance, args["session_id"], args["delegation"])
    env = build_environment(descriptor, dict(os.environ), scv_home, parent=parent, depth=args["depth"],
                            full_permissions=bool(args.get("full_permissions")))
    if traceparent.from_options(ctx.options) is not None:
        # The agent's parent is its invoke_agent span; an agent that exports its own telemetry
        # (to the OTEL_* endpoint it inherits) names itself, not SCV.
        traceparent.apply_options(env, ctx.options)
        env["OTEL_SERVICE_NAME"] = descriptor.name
    run = tracking.DelegatedRun(handle=args["delegation"], agent=descriptor.name,
                                parent=env[lineage.PARENT_VARIABLE], depth=args["depth"], cwd=cwd,
                                conversation=args.get("conversation"), turn=args.get("turn"))
    return env, run, RecordKeeper(scv_home)
