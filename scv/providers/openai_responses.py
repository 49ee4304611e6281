"""The OpenAI Responses wire API (`wire_api = "responses"`): POST {base_url}/responses, streamed.

Text arrives as `response.output_text.delta`; each finished output item (a message or a
function call) as `response.output_item.done`; `response.completed` carries the usage and
ends the reply. A stream that ends without it was dropped.
"""

from typing import Any

from scv.core.cancellation import Cancellation
from scv.providers.base import (AssistantMessage, ModelReply, ModelRequest, ProviderError,
                                TextSink, ToolCall, ToolOutput, Usage, UserMessage)
from scv.providers.http import EndpointProvider


def input_items(request: ModelRequest) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for entry in request.history:
        match entry:
            case UserMessage(text=text):
                items.append({"role": "user", "content": text})
            case AssistantMessage(text=text, tool_calls=calls):
                if text:
                    items.append({"type": "message", "role": "assistant",
                                  "content": [{"type": "output_text", "text": text}]})
                for call in calls:
                    items.append({"type": "function_call", "call_id": call.id, "name": call.name,
                                  "arguments": call.arguments})
            case ToolOutput(call_id=call_id, output=output):
                items.append({"type": "function_call_output", "call_id": call_id, "output": output})
    return items


def request_body(request: ModelRequest, model: str) -> dict[str, Any]:
    tools: list[dict[str, Any]] = [{"type": "function", "name": tool["name"], "description": tool["description"],
                                    "parameters": tool["schema"], "strict": False} for tool in request.tools]
    tools.extend(request.hosted_tools)
    body: dict[str, Any] = {"model": model, "instructions": request.system_prompt, "input": input_items(request),
                            "stream": True, "store": False}
    if tools:
        body["tools"] = tools
    return body


def _usage(data: Any) -> Usage:
    if not isinstance(data, dict):
        return Usage()
    inp, out = int(data.get("input_tokens") or 0), int(data.get("output_tokens") or 0)
    details = data.get("input_tokens_details")
    cached = int(details.get("cached_tokens") or 0) if isinstance(details, dict) else 0
    return Usage(input_tokens=inp, output_tokens=out, total_tokens=int(data.get("total_tokens") or inp + out),
                 cached_input_tokens=min(cached, inp))


class ReplyBuilder:
    """Folds the stream's events into one reply."""

    def __init__(self, provider: str, on_text: TextSink):
        self.provider = provider
        self.on_text = on_text
        self.streamed: list[str] = []
        self.texts: list[str] = []
        self.calls: list[ToolCall] = []
        self.annotations: list[dict[str, Any]] = []
        self.usage = Usage()
        self.done = False

    def handle(self, kind: str, data: dict[str, Any]) -> None:
        if kind == "response.output_text.delta":
            delta = str(data.get("delta") or "")
            if delta:
                self.streamed.append(delta)
                self.on_text(delta)
        elif kind == "response.output_item.done":
            self._item(data.get("item") or {})
        elif kind in ("response.completed", "response.incomplete"):
            response = data.get("response") or {}
            self.usage = _usage(response.get("usage"))
            self.done = True
            if kind == "response.incomplete":
                reason = (response.get("incomplete_details") or {}).get("reason") or "unknown"
                if not (self.texts or self.calls or self.streamed):
                    raise ProviderError(f"provider {self.provider} ended the reply incomplete ({reason})")
        elif kind == "response.failed":
            error = (data.get("response") or {}).get("error") or {}
            raise ProviderError(f"provider {self.provider} failed the reply: {str(error.get('message') or error)[:300]}")
        elif kind == "error":
            message = data.get("message") or (data.get("error") or {}).get("message") or data
            raise ProviderError(f"provider {self.provider} reported an error: {str(message)[:300]}")

    def _item(self, item: dict[str, Any]) -> None:
        kind = item.get("type")
        if kind == "function_call":
            self.calls.append(ToolCall(id=str(item.get("call_id") or item.get("id") or f"call_{len(self.calls)}"),
                                       name=str(item.get("name") or ""), arguments=str(item.get("arguments") or "")))
        elif kind == "message":
            for part in item.get("content") or []:
                if isinstance(part, dict) and part.get("type") == "output_text":
                    self.texts.append(str(part.get("text") or ""))
                    self.annotations.extend(note for note in part.get("annotations") or [] if isinstance(note, dict))

    def reply(self) -> ModelReply:
        text = "".join(self.texts) if self.texts else "".join(self.streamed)
        return ModelReply(text=text, tool_calls=tuple(self.calls), usage=self.usage, annotations=tuple(self.annotations))


class ResponsesProvider(EndpointProvider):
    wire_api = "responses"

    def complete(self, request: ModelRequest, *, on_text: TextSink, cancel: Cancellation) -> ModelReply:
        response = self.client.post(request_body(request, self.model), cancel)
        builder = ReplyBuilder(self.name, on_text)
        for event in self.client.events(response, cancel):
            data = self.client.decode(event)
            with self.client.reading(event):
                builder.handle(str(data.get("type") or event.event), data)
            if builder.done:
                break
        if not builder.done:
            raise self.client.dropped("no response.completed event")
        return builder.reply()
