"""Issue 3's benchmark: the turn loop's own overhead. One turn of the script provider asking for
five `read` calls (then a final reply) against five bare `read` calls through the same
supervisor's ToolRunner (what `scv tool read` does), in the same process."""

import json
import tempfile
from pathlib import Path

from scv.config.load import Config
from scv.core.cancellation import Cancellation
from scv.providers.script import ScriptProvider
from scv.session.calls import ToolRunner
from scv.session.session import Session
from scv.supervision.approval import approve_all
from scv.supervision.supervisor import Supervisor
from scv.tools.base import ToolContext
from scv.tools.registry import build_registry, executor_modules
from tests.benchmarks.common import interleaved, line

ROUNDS = 40
WARMUP = 3


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "ws"
        ws.mkdir()
        content = "".join(f"line {i:04d} of a two kilobyte file\n" for i in range(64))[:2048]
        for index in range(5):
            (ws / f"f{index}.txt").write_text(content)
        calls = {"text": "reading", "calls": [{"tool": "read", "args": {"path": f"f{i}.txt"}} for i in range(5)]}
        script = Path(tmp) / "turns.jsonl"
        script.write_text("\n".join(json.dumps(t) for _ in range(ROUNDS + WARMUP)
                                    for t in (calls, {"text": "done"})) + "\n")
        config = Config()
        with Supervisor(preload=executor_modules()) as sup:
            ctx = ToolContext(workspace=ws, config=config)
            session = Session(sup, ctx, ScriptProvider(script), emit=lambda name, params: None)
            bare = ToolRunner(sup, build_registry(ctx), ctx, approve_all)

            def turn() -> None:
                outcome = session.run_turn("read the five files", cancel=Cancellation())
                assert outcome.status == "completed", outcome.error
                # One session, many turns: keep the history from growing across rounds.
                session.history.clear()

            def five_bare() -> None:
                for index in range(5):
                    assert bare.call("read", {"path": f"f{index}.txt"}).ok

            for _ in range(WARMUP):
                turn()
                five_bare()
            loop_s, bare_s = interleaved(turn, five_bare, ROUNDS)
        line("five bare read calls (ToolRunner, same supervisor), median", f"{bare_s * 1000:.2f} ms")
        line("one turn: script provider, five read calls, final reply", f"{loop_s * 1000:.2f} ms")
        line("turn loop overhead per turn", f"{(loop_s - bare_s) * 1000:.2f} ms")
        line("ratio turn / bare calls", f"{loop_s / bare_s:.2f}x")
