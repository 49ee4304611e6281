"""The Chat Completions wire API (`wire_api = "chat"`): POST {base_url}/chat/completions, streamed.

Chunks carry `choices[0].delta` with content and tool-call fragments (joined by their
`index`); with `stream_options.include_usage` a last chunk carries the usage; `data: [DONE]`
ends the stream. A stream that ends with neither `[DONE]` nor a `finish_reason` was dropped.
"""

from typing import Any

from scv.core.cancellation import Cancellation
from scv.providers.base import (AssistantMessage, ModelReply, ModelRequest, ProviderError, TextSink,
                                ToolCall, ToolOutput, Usage, UserMessage)
from scv.providers.http import EndpointProvider


def messages(request: ModelRequest) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"role": "system", "content": request.system_prompt}]
    for entry in request.history:
        match entry:
            case UserMessage(text=text):
                out.append({"role": "user", "content": text})
            case AssistantMessage(text=text, tool_calls=calls):
                # null content only beside tool calls: some local servers refuse it elsewhere
                message: dict[str, Any] = {"role": "assistant", "content": text or (None if calls else "")}
                if calls:
                    message["tool_calls"] = [{"id": c.id, "type": "function",
                                              "function": {"name": c.name, "arguments": c.arguments}} for c in calls]
                out.append(message)
            case ToolOutput(call_id=call_id, output=output):
                out.append({"role": "tool", "tool_call_id": call_id, "content": output})
    return out


def request_body(request: ModelRequest, model: str) -> dict[str, Any]:
    body: dict[str, Any] = {"model": model, "messages": messages(request), "stream": True,
                            "stream_options": {"include_usage": True}}
    if request.tools:
        body["tools"] = [{"type": "function", "function": {"name": t["name"], "description": t["description"],
                                                           "parameters": t["schema"]}} for t in request.tools]
    return body


class _PartialCall:
    def __init__(self):
        self.id = ""
        self.name = ""
        self.arguments: list[str] = []


def _usage(raw: dict[str, Any]) -> Usage:
    inp, out = int(raw.get("prompt_tokens") or 0), int(raw.get("completion_tokens") or 0)
    details = raw.get("prompt_tokens_details")
    cached = int(details.get("cached_tokens") or 0) if isinstance(details, dict) else 0
    return Usage(input_tokens=inp, output_tokens=out, total_tokens=int(raw.get("total_tokens") or inp + out),
                 cached_input_tokens=min(cached, inp))


class ChatProvider(EndpointProvider):
    wire_api = "chat"

    def complete(self, request: ModelRequest, *, on_text: TextSink, cancel: Cancellation) -> ModelReply:
        response = self.client.post(request_body(request, self.model), cancel)
        text: list[str] = []
        calls: dict[int, _PartialCall] = {}
        usage = Usage()
        finished = done = False
        for event in self.client.events(response, cancel):
            if event.data.strip() == "[DONE]":
                done = True
                break
            data = self.client.decode(event)
            with self.client.reading(event):
                finished = self._fold(data, text, calls, on_text) or finished
                if isinstance(data.get("usage"), dict):
                    usage = _usage(data["usage"])
        if not (done or finished):
            raise self.client.dropped("no finish_reason and no [DONE]")
        tool_calls = tuple(ToolCall(id=p.id or f"call_{i}", name=p.name, arguments="".join(p.arguments))
                           for i, p in sorted(calls.items()))
        return ModelReply(text="".join(text), tool_calls=tool_calls, usage=usage)

    def _fold(self, data: dict[str, Any], text: list[str], calls: dict[int, _PartialCall], on_text: TextSink) -> bool:
        """One chunk's text and tool-call fragments; True if it finished the choice."""
        if data.get("error"):
            error = data["error"]
            message = error.get("message") if isinstance(error, dict) else error
            raise ProviderError(f"provider {self.name} reported an error: {str(message)[:300]}")
        finished = False
        for choice in data.get("choices") or []:
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            content = delta.get("content")
            if content:
                text.append(str(content))
                on_text(str(content))
            for fragment in delta.get("tool_calls") or []:
                partial = calls.setdefault(int(fragment.get("index", len(calls))), _PartialCall())
                partial.id = fragment.get("id") or partial.id
                function = fragment.get("function") or {}
                partial.name = function.get("name") or partial.name
                if function.get("arguments"):
                    partial.arguments.append(str(function["arguments"]))
            if choice.get("finish_reason"):
                finished = True
        return finished
