"""A session with the fake MCP seam (scv/mcp/fake.py): what the seam offers is what the model is
offered, a changed list takes effect at the next model request, and a call goes through the
approval gate and the seam with the model's arguments."""

import msgspec

from scv.config.load import load_config
from scv.core.cancellation import Cancellation
from scv.core.messages import Result
from scv.mcp.fake import FakeMcpServers
from scv.providers.base import ModelReply, ToolCall, ToolOutput
from scv.providers.fake import FakeProvider
from scv.session.session import Session
from scv.tools.base import ToolContext

LISTED = [{"name": "get_issue", "description": "Fetch one issue.", "read_only": True,
           "input_schema": {"type": "object", "required": ["number"], "properties": {"number": {"type": "integer"}}}},
          {"name": "bad", "input_schema": {"type": "array"}}]
CLOSE = {"name": "close_issue", "input_schema": {"type": "object", "properties": {"number": {"type": "integer"}}}}


def test_the_seam_s_tools_reach_the_model_and_changes_apply_at_the_next_request(supervisor, workspace):
    fake = FakeMcpServers({"gh": LISTED}, answer=lambda message: Result(ok=True, value={"content": [
        {"type": "text", "text": f"issue {message.args['arguments']['number']}"}]}))

    def call_then_change(request):
        fake.change("gh", [LISTED[0], CLOSE])
        return ModelReply(tool_calls=(ToolCall(id="c1", name="mcp__gh__get_issue", arguments='{"number": 7}'),))

    provider = FakeProvider([call_then_change, ModelReply(text="done")])
    ctx = ToolContext(workspace=workspace, config=load_config(workspace))
    session = Session(supervisor, ctx, provider, emit=lambda name, params: None, mcp=fake)
    try:
        assert fake.started and "mcp__gh__get_issue" in session.registry.names()
        assert any("left out: its input schema is not an object schema" in note for note in fake.notes)
        outcome = session.run_turn("look", cancel=Cancellation())
        assert outcome.status == "completed", outcome.error
    finally:
        session.close()
    assert fake.closed
    first, second = ([t["name"] for t in request.tools if t["name"].startswith("mcp__")] for request in provider.requests)
    assert first == ["mcp__gh__get_issue"] and second == ["mcp__gh__get_issue", "mcp__gh__close_issue"]
    (sent,) = fake.sent
    assert sent.args == {"op": "call", "tool": "get_issue", "arguments": {"number": 7}}
    (output,) = [item for item in session.history if isinstance(item, ToolOutput)]
    assert msgspec.json.decode(output.output)["content"] == [{"type": "text", "text": "issue 7"}]
