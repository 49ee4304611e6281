"""An in-memory provider for unit tests: replays prepared replies and records each request."""

from typing import Callable

from scv.core.cancellation import Cancellation
from scv.providers.base import ModelReply, ModelRequest, Provider, ProviderError, TextSink


class FakeProvider(Provider):
    def __init__(self, replies: list[ModelReply | Exception | Callable[[ModelRequest], ModelReply]],
                 name: str = "fake", model: str = "fake-model"):
        self.name = name
        self.model = model
        self._replies = list(replies)
        self.requests: list[ModelRequest] = []

    def complete(self, request: ModelRequest, *, on_text: TextSink, cancel: Cancellation) -> ModelReply:
        self.requests.append(request)
        if not self._replies:
            raise ProviderError(f"provider {self.name} has no more prepared replies")
        reply = self._replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        if callable(reply):
            reply = reply(request)
        if reply.text:
            on_text(reply.text)
        return reply
