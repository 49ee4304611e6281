"""The model provider seam: one method, `complete`, from a request to the model's reply.

A request carries the whole conversation in a neutral form (the history items below); each
wire API translates it. A provider streams the reply's text through `on_text` as it arrives
and returns the complete reply once the model has finished.
"""

import abc
from typing import Any, Callable, Union

import msgspec

from scv.core.cancellation import Cancellation
from scv.core.errors import ScvError


class ProviderError(ScvError):
    """The model endpoint failed the request; the sentence names the provider. Ends the turn."""

    exit_code = 1


class TurnCancelled(ScvError):
    """The turn was cancelled (signal, timeout, client) while waiting for the model."""

    exit_code = 1


# --- the conversation ---------------------------------------------------------------------------

class UserMessage(msgspec.Struct, tag="user", frozen=True):
    text: str


class ToolCall(msgspec.Struct, frozen=True):
    id: str
    name: str
    arguments: str          # the model's raw JSON text: validated by the tool, not here


class AssistantMessage(msgspec.Struct, tag="assistant", frozen=True):
    text: str
    tool_calls: tuple[ToolCall, ...] = ()


class ToolOutput(msgspec.Struct, tag="tool_output", frozen=True):
    call_id: str
    output: str             # JSON text of the result, as the model reads it


HistoryItem = Union[UserMessage, AssistantMessage, ToolOutput]


class Usage(msgspec.Struct):
    input_tokens: int = 0           # every input token, cached ones included (as the endpoints count them)
    output_tokens: int = 0
    total_tokens: int = 0
    cached_input_tokens: int = 0    # the part of input_tokens read from the endpoint's prompt cache

    def add(self, other: "Usage") -> None:
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.total_tokens += other.total_tokens
        self.cached_input_tokens += other.cached_input_tokens


class ModelRequest(msgspec.Struct, frozen=True, kw_only=True):
    system_prompt: str
    history: tuple[HistoryItem, ...]
    tools: tuple[dict[str, Any], ...]       # {"name", "description", "schema"} of each offered tool
    hosted_tools: tuple[dict[str, Any], ...] = ()   # the endpoint's own tools, e.g. {"type": "web_search"}


class ModelReply(msgspec.Struct, kw_only=True):
    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = msgspec.field(default_factory=Usage)
    annotations: tuple[dict[str, Any], ...] = ()    # of the output text, e.g. hosted search's url_citation


TextSink = Callable[[str], None]


class Provider(abc.ABC):
    """A model endpoint (or a script standing in for one)."""

    #: how errors and events name this provider: the config profile's name, or "script"
    name: str
    #: the model asked for, as reported to clients
    model: str
    #: "responses" or "chat" for an OpenAI-compatible endpoint; "" for one without hosted tools
    wire_api: str = ""

    def when_sent(self, callback: Callable[[], None]) -> None:
        """Calls `callback` once, as soon as the first request is on its way (a command starts
        its deferred work then); a provider with nothing to send calls it now."""
        callback()

    @abc.abstractmethod
    def complete(self, request: ModelRequest, *, on_text: TextSink, cancel: Cancellation) -> ModelReply:
        """The model's next reply. Raises ProviderError or TurnCancelled."""
