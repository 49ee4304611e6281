"""A scripted ACP agent built on the official ACP Python SDK (`agent-client-protocol`), run as a
real process behind a fake `claude-agent-acp`, `codex-acp`, `grok` or `dsh` (see
tests/live_fakes.py). What it does in a turn is chosen by the prompt's first word; how it starts
by its flags. Everything it sees is appended, one JSON object a line, to `--log`.

Prompts: hello, count, permission KIND PATH [always-only|none|slow], fs, slow, ignore-cancel, die,
refuse, max, flood BYTES, auth, unknown, config, loop. Flags: --signed-out-new, --protocol N,
--modes claude|claude-root|codex|claude-auto|codex-agent|none, --linger (keep running after stdin closes, like the real
servers), --escapee (leave a setsid'd child behind).
"""

import argparse
import asyncio
import json
import os
import subprocess
import sys
from typing import Any

import acp
from acp import RequestError, schema

LOG: str = ""


def log(event: str, **fields: Any) -> None:
    with open(LOG, "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"event": event, **fields}) + "\n")


MODES = {
    "claude": ["default", "acceptEdits", "plan", "bypassPermissions"],
    "claude-root": ["default", "acceptEdits", "plan", "dontAsk"],
    "codex": ["read-only", "auto", "full-access"],
    # Sessions that start where the vendor's own model answers permission requests.
    "claude-auto": ["auto", "default", "acceptEdits", "plan", "dontAsk"],
    "codex-agent": ["agent", "read-only", "workspace-write", "agent-full-access"],
    "none": [],
}


def select(option_id: str, name: str, category: str, current: str, values: list[str]):
    return schema.SessionConfigOptionSelect(
        id=option_id, name=name, category=category, type="select", current_value=current,
        options=[schema.SessionConfigSelectOption(value=v, name=v) for v in values])


class Peer:
    def __init__(self, options):
        self.options = options
        self.conn = None
        self.turns = 0
        self.cancelled = asyncio.Event()
        self.mode = None
        self.config = {"model": "default", "reasoning_effort": "medium"}

    def on_connect(self, conn) -> None:
        self.conn = conn

    async def initialize(self, protocol_version, client_capabilities=None, client_info=None, **kwargs):
        log("initialize", protocol_version=protocol_version,
            client_capabilities=client_capabilities.model_dump(by_alias=True, exclude_none=True) if client_capabilities else None,
            client_info=client_info.model_dump(by_alias=True, exclude_none=True) if client_info else None)
        return schema.InitializeResponse(protocol_version=self.options.protocol,
                                         agent_info=schema.Implementation(name="acp-peer", version="1.0"))

    def _config_options(self):
        options = [select("model", "Model", "model", self.config["model"], ["default", "fast-model", "big-model"]),
                   select("reasoning_effort", "Effort", "thought_level", self.config["reasoning_effort"],
                          ["low", "medium", "high"])]
        modes = MODES[self.options.modes]
        if modes:
            options.insert(0, select("mode", "Mode", "mode", self.mode or modes[0], modes))
        return options

    async def new_session(self, cwd, mcp_servers=None, **kwargs):
        log("session/new", cwd=cwd, mcp_servers=[m for m in (mcp_servers or [])], pid=os.getpid())
        if self.options.signed_out_new:
            raise RequestError(-32000, "Authentication required")
        modes = MODES[self.options.modes]
        self.mode = modes[0] if modes else None
        state = None
        if modes:
            state = schema.SessionModeState(current_mode_id=modes[0],
                                            available_modes=[schema.SessionMode(id=m, name=m) for m in modes])
        return schema.NewSessionResponse(session_id="peer-session-1", modes=state,
                                         config_options=self._config_options())

    async def set_session_mode(self, mode_id, session_id, **kwargs):
        log("session/set_mode", mode_id=mode_id)
        if mode_id not in MODES[self.options.modes]:
            raise RequestError(-32603, "Internal error", {"details": f"no mode {mode_id}"})
        self.mode = mode_id
        return schema.SetSessionModeResponse()

    async def set_config_option(self, config_id, session_id, value, **kwargs):
        log("session/set_config_option", config_id=config_id, value=value)
        offered = {o.id: [c.value for c in o.options] for o in self._config_options()}
        if config_id not in offered:
            raise RequestError.invalid_params({"reason": "Unsupported config option"})
        if value not in offered[config_id]:
            raise RequestError.invalid_params({"reason": f"{value} is not offered"})
        if config_id == "mode":
            self.mode = value
        else:
            self.config[config_id] = value
        return schema.SetSessionConfigOptionResponse(config_options=self._config_options())

    async def cancel(self, session_id, **kwargs):
        log("session/cancel", session_id=session_id)
        self.cancelled.set()

    async def _say(self, session_id, text):
        await self.conn.session_update(session_id, acp.update_agent_message_text(text))

    async def prompt(self, session_id, prompt, **kwargs):
        text = " ".join(block.text for block in prompt if getattr(block, "text", None))
        self.turns += 1
        self.cancelled.clear()
        # kwargs: the request's `_meta` members (the SDK passes them as keywords), e.g. traceparent.
        log("session/prompt", session_id=session_id, text=text, turn=self.turns, pid=os.getpid(), meta=kwargs)
        if text.startswith("Your final reply did not give a JSON document"):
            # SCV's schema repair turn (issue 21): the document, on the same session.
            await self._say(session_id, '{"verdict": "pass", "turn": %d}' % self.turns)
            return schema.PromptResponse(stop_reason="end_turn")
        word, *rest = text.split()
        handler = getattr(self, "do_" + word.replace("-", "_"), None)
        if handler is None:
            await self._say(session_id, f"unknown prompt {word}")
            return schema.PromptResponse(stop_reason="end_turn")
        return await handler(session_id, rest)

    async def do_hello(self, session_id, rest):
        await self._say(session_id, "")
        await self.conn.session_update(session_id, acp.update_agent_thought_text("THOUGHT never shown"))
        await self.conn.session_update(session_id, acp.update_plan([
            acp.plan_entry("read the code", status="completed"), acp.plan_entry("write the fix", status="in_progress")]))
        await self.conn.session_update(session_id, acp.start_tool_call(
            "call-1", "curl -H 'Authorization: Bearer sk-live-0123456789abcdef' https://x.example/a?token=1",
            kind="fetch", status="pending"))
        await self.conn.session_update(session_id, acp.update_tool_call(
            "call-1", status="completed", content=[acp.tool_content(acp.text_block("TOOL OUTPUT never shown"))]))
        await self.conn.session_update(session_id, acp.start_tool_call("call-2", "", kind="search", status="pending"))
        await self.conn.session_update(session_id, acp.update_tool_call("call-2", status="failed"))
        await self._say(session_id, "Hello from the")
        await self._say(session_id, " peer.\nSecond line")
        return schema.PromptResponse(stop_reason="end_turn",
                                     usage=schema.Usage(input_tokens=11, output_tokens=5, cached_read_tokens=2,
                                                        total_tokens=16))

    async def do_count(self, session_id, rest):
        await self._say(session_id, f"turn {self.turns} in process {os.getpid()}")
        return schema.PromptResponse(stop_reason="end_turn")

    async def do_config(self, session_id, rest):
        await self._say(session_id, f"model={self.config['model']} effort={self.config['reasoning_effort']} "
                                    f"mode={self.mode}")
        return schema.PromptResponse(stop_reason="end_turn")

    async def do_permission(self, session_id, rest):
        kind, path, *variant = rest
        offered = [("allow", "allow_once"), ("always", "allow_always"), ("reject", "reject_once"),
                   ("never", "reject_always")]
        if "always-only" in variant:
            offered = [o for o in offered if o[1].endswith("always")]
        call = schema.ToolCallUpdate(tool_call_id="perm-1", title=f"{kind} {os.path.basename(path)}", kind=kind,
                                     status="pending", locations=[schema.ToolCallLocation(path=path)])
        await self.conn.session_update(session_id, acp.start_tool_call("perm-1", call.title, kind=kind))
        if "none" in variant:
            # No allow or reject option at all (the SDK's own model insists on one: sent raw).
            request = asyncio.ensure_future(self.conn._conn.send_request("session/request_permission", {
                "sessionId": session_id, "toolCall": call.model_dump(by_alias=True, exclude_none=True),
                "options": []}))
        else:
            request = asyncio.ensure_future(self.conn.request_permission(
                session_id=session_id, tool_call=call,
                options=[schema.PermissionOption(option_id=i, name=i, kind=k) for i, k in offered]))
        if "slow" in variant:
            await self.cancelled.wait()
        answer = await request
        outcome = schema.RequestPermissionResponse.model_validate(answer).outcome if isinstance(answer, dict) \
            else answer.outcome
        chosen = getattr(outcome, "option_id", None)
        log("permission", kind=kind, outcome=outcome.outcome, option=chosen)
        if chosen in ("allow", "always") and kind == "edit":
            with open(path, "w") as fh:
                fh.write("written by the peer\n")
        if outcome.outcome == "cancelled":
            return schema.PromptResponse(stop_reason="cancelled")
        await self._say(session_id, f"permission {chosen}")
        return schema.PromptResponse(stop_reason="end_turn")

    async def do_fs(self, session_id, rest):
        for method, params in (("fs/read_text_file", {"sessionId": session_id, "path": "/etc/hostname"}),
                               ("terminal/create", {"sessionId": session_id, "command": "ls"}),
                               ("weird/method", {})):
            try:
                await self.conn._conn.send_request(method, params)
                log("client_request", method=method, code=None)
            except RequestError as err:
                log("client_request", method=method, code=err.code, message=str(err))
        await self._say(session_id, "fs done")
        return schema.PromptResponse(stop_reason="end_turn")

    async def do_slow(self, session_id, rest):
        await self._say(session_id, "working slowly\n")
        await self.cancelled.wait()
        return schema.PromptResponse(stop_reason="cancelled")

    async def do_loop(self, session_id, rest):
        """A round of tool calls after another, without end, until SCV sends session/cancel."""
        round_ = 0
        while not self.cancelled.is_set():
            round_ += 1
            call_id = f"loop-{round_}"
            await self.conn.session_update(session_id, acp.start_tool_call(call_id, f"step {round_}", kind="read"))
            await self.conn.session_update(session_id, acp.update_tool_call(call_id, status="completed"))
            log("round", n=round_)
            await self._say(session_id, f"round {round_}\n")
            try:
                await asyncio.wait_for(self.cancelled.wait(), 0.02)
            except asyncio.TimeoutError:
                pass
        return schema.PromptResponse(stop_reason="cancelled")

    async def do_ignore_cancel(self, session_id, rest):
        await self._say(session_id, "not listening\n")
        await asyncio.sleep(3600)
        return schema.PromptResponse(stop_reason="end_turn")

    async def do_die(self, session_id, rest):
        await self._say(session_id, "about to go\n")
        sys.stderr.write("peer dying on purpose\n")
        sys.stderr.flush()
        os._exit(7)

    async def do_refuse(self, session_id, rest):
        await self._say(session_id, "I can't help with that.")
        return schema.PromptResponse(stop_reason="refusal")

    async def do_max(self, session_id, rest):
        await self._say(session_id, "partial answer")
        return schema.PromptResponse(stop_reason="max_tokens")

    async def do_flood(self, session_id, rest):
        total = int(rest[0])
        piece = "é" * 1000
        while total > 0:
            await self._say(session_id, piece)
            total -= len(piece.encode())
        return schema.PromptResponse(stop_reason="end_turn")

    async def do_auth(self, session_id, rest):
        raise RequestError(-32000, "Authentication required")

    async def do_unknown(self, session_id, rest):
        raw = self.conn._conn
        await raw.send_notification("session/update", {"sessionId": session_id,
                                                       "update": {"sessionUpdate": "brand_new_variant", "x": 1}})
        await raw.send_notification("zzz/unknown_notice", {"anything": [1, 2]})
        await raw.send_notification("session/update", {"sessionId": session_id, "extraField": True,
                                                       "update": {"sessionUpdate": "agent_message_chunk",
                                                                  "content": {"type": "text", "text": "still here",
                                                                              "unknownField": {"a": 1}}}})
        return schema.PromptResponse(stop_reason="end_turn")


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--log", required=True)
    parser.add_argument("--signed-out-new", action="store_true")
    parser.add_argument("--protocol", type=int, default=1)
    parser.add_argument("--modes", default="claude")
    parser.add_argument("--linger", action="store_true")
    parser.add_argument("--escapee", action="store_true")
    options, rest = parser.parse_known_args()
    global LOG
    LOG = options.log
    log("start", argv=rest, env={k: v for k, v in os.environ.items()}, pid=os.getpid())
    if options.escapee:
        subprocess.Popen(["sleep", "300"], start_new_session=True, stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    await acp.run_agent(Peer(options))
    log("stdin closed")
    if options.linger:
        await asyncio.sleep(3600)


if __name__ == "__main__":
    asyncio.run(main())
