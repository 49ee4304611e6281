"""The driver's check of a task that runs on another machine (`--engine ray`): everything the
`agent` tool checks that does not depend on the agents installed here. The driver machine needs
no agent; the node that runs the task checks the rest (offered, signed in, cwd inside its
workspace) and fails the task with the sentence when it refuses."""

import os
from typing import Any, Callable

from scv.config.load import Config
from scv.core.agents.descriptors import DESCRIPTORS
from scv.core.agents.options import blank_to_none, check_effort, check_model, check_prompt
from scv.core.errors import RefusedError


def checker(config: Config) -> Callable[[dict[str, Any]], dict[str, Any]]:
    ceiling = config.tools.max_timeout_seconds

    def check(args: dict[str, Any]) -> dict[str, Any]:
        agent = blank_to_none(args.get("agent"))
        if agent is not None and agent not in DESCRIPTORS:
            raise RefusedError(f'agent "{agent}" is not an agent SCV knows; choose one of: {", ".join(DESCRIPTORS)}')
        check_prompt(args["prompt"])
        model, effort = blank_to_none(args.get("model")), blank_to_none(args.get("effort"))
        if model is not None:
            check_model(model)
        if effort is not None:
            check_effort(effort)
        if agent is not None:
            descriptor = DESCRIPTORS[agent]
            for option, value in (("model", model), ("effort", effort)):
                if value is not None and not getattr(descriptor, f"takes_{option}"):
                    takers = ", ".join(name for name, d in DESCRIPTORS.items() if getattr(d, f"takes_{option}"))
                    raise RefusedError(f"{agent} does not take {option}; these agents do: {takers}. Omit {option}, "
                                       "or name one of them")
        timeout = args.get("timeout_seconds")
        if timeout is not None and timeout > ceiling:
            raise RefusedError(f"agent timeout_seconds {timeout} is over the ceiling of {ceiling} seconds "
                               "(tools.max_timeout_seconds); ask for at most that")
        cwd = args.get("cwd")
        if cwd is not None:
            if "\x00" in cwd:
                raise RefusedError("agent cwd contains a NUL byte; remove it")
            if not os.path.isabs(cwd) and os.path.normpath(cwd).split(os.sep)[0] == "..":
                raise RefusedError(f"agent cwd {cwd!r} leaves the workspace; pass a folder inside the node's "
                                   "workspace (scv cluster join --workspace)")
        return args
    return check
