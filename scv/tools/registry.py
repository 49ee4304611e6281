"""The one place tools are registered.

Built-in tools are listed by name in scv/tools/catalog.py; a registry imports a spec only
when the tool is first asked for, so a command that runs one `read` never imports the agent,
web or job code. Listing every tool (a session's schema, `scv tools`) imports them all.
"""

import importlib
from typing import Iterator

from scv.core.errors import RefusedError
from scv.tools.base import ToolContext, ToolSpec
from scv.tools.catalog import BUILTIN_SPECS, MCP_SPEC, WORKER_MODULES
from scv.tools.offering import offered, session_facts
from scv.tools.services import Services


def spec_class(name: str) -> type[ToolSpec]:
    """The built-in tool `name`'s spec class, imported now (KeyError: no such built-in tool)."""
    module_name, _, attribute = BUILTIN_SPECS[name][0].partition(":")
    return getattr(importlib.import_module(module_name), attribute)


def builtin_classes() -> tuple[type[ToolSpec], ...]:
    return tuple(spec_class(name) for name in BUILTIN_SPECS)


def __getattr__(name: str):
    # `BUILTIN`, every spec class at once, for code that wants them all (the conformance test).
    if name == "BUILTIN":
        return builtin_classes()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class Registry:
    """The tools one session offers. Tools given as `pending` names are built (and their spec
    imported) when first asked for, and kept only if the catalog's needs say they are offered."""

    def __init__(self, ctx: ToolContext | None = None, services: Services | None = None,
                 pending: tuple[str, ...] = ()):
        self._tools: dict[str, ToolSpec | None] = dict.fromkeys(pending)
        self._ctx = ctx
        self._services = services if services is not None else Services()

    def set_mcp(self, specs: list[ToolSpec]) -> None:
        """The MCP servers' tools now offered (mcp__<server>__<tool>), replacing the earlier ones."""
        for name in [name for name in self._tools if name.startswith("mcp__")]:
            del self._tools[name]
        for spec in specs:
            self.register(spec)

    def register(self, spec: ToolSpec) -> None:
        if spec.name in self._tools:
            raise ValueError(f"a tool named {spec.name!r} is already registered")
        self._tools[spec.name] = spec

    def _built(self, name: str) -> ToolSpec | None:
        spec = self._tools[name]
        if spec is None:
            # A built-in tool is offered by what the catalog says it needs: one that is not offered
            # never has its spec imported (a chat tool's channel code, the job tools' table).
            if not offered(name, session_facts(self._ctx, self._services)):
                del self._tools[name]
                return None
            spec = self._tools[name] = spec_class(name)(self._services)
        return spec

    def get(self, name: str) -> ToolSpec:
        spec = self._built(name) if name in self._tools else None
        if spec is None:
            known = ", ".join(sorted(self.names()))
            raise RefusedError(f"unknown tool {name!r}; the tools are: {known}")
        return spec

    def __iter__(self) -> Iterator[ToolSpec]:
        return iter([spec for name in list(self._tools) if (spec := self._built(name)) is not None])

    def names(self) -> list[str]:
        return [spec.name for spec in self]


def build_registry(ctx: ToolContext, services: Services | None = None) -> Registry:
    """The tools a session offers: every built-in tool its configuration enables, each built with
    the session's collaborators when first used."""
    return Registry(ctx, services, tuple(BUILTIN_SPECS))


def load_call_modules(registry: Registry) -> None:
    """Imports what the offered tools' calls need beyond their specs (ToolSpec.call_modules)."""
    for module in sorted({module for spec in registry for module in spec.call_modules}):
        importlib.import_module(module)


def mcp_class() -> type[ToolSpec]:
    """The spec class of every MCP server's tool, imported now."""
    module_name, _, attribute = MCP_SPEC[0].partition(":")
    return getattr(importlib.import_module(module_name), attribute)


def executor_modules() -> list[str]:
    """What the fork point preloads for a session: every built-in tool's executor module, the MCP
    tools' and the live worker's loop."""
    return sorted({executor for _, executor in BUILTIN_SPECS.values()} | {MCP_SPEC[1]} | set(WORKER_MODULES))
