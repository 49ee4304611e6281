"""Anthropic's Messages API (`kind = "anthropic"`): POST {base_url}/v1/messages, streamed.

The system prompt is a field of its own; tool calls are `tool_use` content blocks of the
assistant's message and their results `tool_result` blocks of the next user message, so the
outputs of one round go back together in one message. The stream names its events:
`content_block_start` opens a text or tool_use block at an index, `content_block_delta` adds
text or a fragment of the call's input JSON, `message_delta` carries the stop reason and the
output tokens, `message_stop` ends the reply; an `error` event ends the turn. A stream that ends
without `message_stop` was dropped.
"""

from typing import Any

import msgspec

from scv.core.cancellation import Cancellation
from scv.providers.base import (AssistantMessage, ModelReply, ModelRequest, ProviderError, TextSink,
                                ToolCall, ToolOutput, Usage, UserMessage)
from scv.providers.http import EndpointProvider, StreamingClient

MESSAGES_PATH = "/v1/messages"


def messages_url(base_url: str) -> str:
    """The endpoint of a base URL given with or without its /v1."""
    base = base_url.rstrip("/")
    return base + ("/messages" if base.endswith("/v1") else MESSAGES_PATH)


def _tool_input(arguments: str) -> Any:
    """A recorded call's input as the API wants it back: an object. The model's own text is kept
    where it is not one, under a key that says so, rather than dropped."""
    try:
        value = msgspec.json.decode(arguments) if arguments.strip() else {}
    except ValueError:
        return {"unparsed_arguments": arguments}
    return value if isinstance(value, dict) else {"unparsed_arguments": arguments}


def messages(request: ModelRequest) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []

    def add(role: str, block: dict[str, Any]) -> None:
        # The API wants user and assistant turns to alternate: a round's tool results and a
        # prompt that follows them share one user message.
        if out and out[-1]["role"] == role:
            out[-1]["content"].append(block)
        else:
            out.append({"role": role, "content": [block]})

    for entry in request.history:
        match entry:
            case UserMessage(text=text):
                add("user", {"type": "text", "text": text})
            case AssistantMessage(text=text, tool_calls=calls):
                if text or not calls:
                    add("assistant", {"type": "text", "text": text or "(no reply)"})
                for call in calls:
                    add("assistant", {"type": "tool_use", "id": call.id, "name": call.name,
                                      "input": _tool_input(call.arguments)})
            case ToolOutput(call_id=call_id, output=output):
                block: dict[str, Any] = {"type": "tool_result", "tool_use_id": call_id, "content": output}
                if _failed(output):
                    block["is_error"] = True
                add("user", block)
    return out


def _failed(output: str) -> bool:
    """SCV's results say {"ok": false, ...} when the call failed: the API's is_error."""
    try:
        result = msgspec.json.decode(output)
    except ValueError:
        return False
    return isinstance(result, dict) and result.get("ok") is False


def request_body(request: ModelRequest, model: str, max_tokens: int) -> dict[str, Any]:
    body: dict[str, Any] = {"model": model, "max_tokens": max_tokens, "system": request.system_prompt,
                            "messages": messages(request), "stream": True}
    if request.tools:
        body["tools"] = [{"name": t["name"], "description": t["description"], "input_schema": t["schema"]}
                         for t in request.tools]
    return body


class _Block:
    def __init__(self, kind: str, call_id: str = "", name: str = ""):
        self.kind = kind
        self.id = call_id
        self.name = name
        self.parts: list[str] = []


class AnthropicProvider(EndpointProvider):
    wire_api = ""       # no hosted tools

    def __init__(self, name: str, model: str, client: StreamingClient, max_tokens: int):
        super().__init__(name, model, client)
        self.max_tokens = max_tokens

    def complete(self, request: ModelRequest, *, on_text: TextSink, cancel: Cancellation) -> ModelReply:
        response = self.client.post(request_body(request, self.model, self.max_tokens), cancel)
        blocks: dict[int, _Block] = {}
        usage = Usage()
        stopped = False
        for event in self.client.events(response, cancel):
            data = self.client.decode(event)
            with self.client.reading(event):
                kind = data.get("type") or event.event
                if kind == "message_stop":
                    stopped = True
                    break
                self._fold(kind, data, blocks, usage, on_text)
        if not stopped:
            raise self.client.dropped("no message_stop")
        usage.total_tokens = usage.input_tokens + usage.output_tokens
        text = "".join("".join(b.parts) for _, b in sorted(blocks.items()) if b.kind == "text")
        calls = tuple(ToolCall(id=b.id or f"toolu_{i}", name=b.name, arguments="".join(b.parts) or "{}")
                      for i, b in sorted(blocks.items()) if b.kind == "tool_use")
        return ModelReply(text=text, tool_calls=calls, usage=usage)

    def _fold(self, kind: str, data: dict[str, Any], blocks: dict[int, _Block], usage: Usage,
              on_text: TextSink) -> None:
        if kind == "error":
            error = data.get("error")
            message = error.get("message") if isinstance(error, dict) else error
            what = f" ({error.get('type')})" if isinstance(error, dict) and error.get("type") else ""
            raise ProviderError(f"provider {self.name} reported an error{what}: {str(message)[:300]}; try again "
                                "later")
        if kind == "message_start":
            raw = (data.get("message") or {}).get("usage") or {}
            # Anthropic's input_tokens leaves out both cache figures; writing the cache is charged as input.
            usage.cached_input_tokens = int(raw.get("cache_read_input_tokens") or 0)
            usage.input_tokens = int(raw.get("input_tokens") or 0) + usage.cached_input_tokens \
                + int(raw.get("cache_creation_input_tokens") or 0)
            usage.output_tokens = int(raw.get("output_tokens") or 0)
        elif kind == "content_block_start":
            start = data["content_block"]
            block = blocks[int(data["index"])] = _Block(str(start.get("type")), str(start.get("id") or ""),
                                                        str(start.get("name") or ""))
            if block.kind == "text" and start.get("text"):
                block.parts.append(str(start["text"]))
                on_text(str(start["text"]))
        elif kind == "content_block_delta":
            block = blocks[int(data["index"])]
            delta = data["delta"]
            if delta.get("type") == "text_delta" and block.kind == "text":
                block.parts.append(str(delta["text"]))
                on_text(str(delta["text"]))
            elif delta.get("type") == "input_json_delta" and block.kind == "tool_use":
                block.parts.append(str(delta["partial_json"]))
        elif kind == "message_delta":
            raw = data.get("usage") or {}
            if "output_tokens" in raw:
                usage.output_tokens = int(raw["output_tokens"] or 0)
            if (data.get("delta") or {}).get("stop_reason") == "max_tokens" and any(
                    b.kind == "tool_use" for b in blocks.values()):
                raise ProviderError(f"provider {self.name} cut a tool call short at max_tokens; raise "
                                    f"providers.{self.name}.max_tokens")
        # ping, content_block_stop and unknown events carry nothing SCV keeps
