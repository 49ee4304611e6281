"""Fake agent CLIs for the `agent` tool's tests: a link named after the agent points at the
committed launcher `tests/fixtures/agents/fake-agent`, which runs the bash script the test wrote
beside it. `replay()` writes a script that replays a captured run (stdout, stderr, exit code,
optionally the capture's timing) and records its argument vector and environment."""

import json
import os
import shlex
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CAPTURES = ROOT / "tests" / "fixtures" / "agents"
LAUNCHER = CAPTURES / "fake-agent"


def capture(agent: str, name: str) -> Path:
    return CAPTURES / agent / name


def meta(agent: str, name: str) -> dict:
    return json.loads((CAPTURES / agent / f"{name}.meta.json").read_text())


@dataclass
class FakeAgent:
    name: str
    bin_dir: Path
    log_dir: Path

    @property
    def executable(self) -> Path:
        return self.bin_dir / self.name

    def write(self, body: str) -> None:
        """The fake's behaviour: a bash script body. It records argv and environment first."""
        q = shlex.quote
        record = (f"n=$(ls {q(str(self.log_dir))} | grep -c '^argv' || true)\n"
                  f"printf '%s\\0' \"$@\" > {q(str(self.log_dir))}/argv.$n\n"
                  f"env -0 > {q(str(self.log_dir))}/env.$n\n"
                  f"pwd > {q(str(self.log_dir))}/cwd.$n\n")
        (self.bin_dir / f"{self.name}.sh").write_text("set -u\n" + record + body)

    def replay(self, agent: str, name: str, *, paced: bool = False, before: str = "", after: str = "",
               exit_code: int | None = None) -> None:
        base = capture(agent, name)
        q = shlex.quote
        lines = []
        if before:
            lines.append(before)
        stdout = base.with_suffix(".jsonl")
        if paced and meta(agent, name).get("line_times_s"):
            times = meta(agent, name)["line_times_s"]
            gaps = [max(0.0, b - a) for a, b in zip([0.0] + times, times)]
            gap_words = " ".join(f"{min(g, 0.3):.3f}" for g in gaps)
            lines.append(f"gaps=({gap_words}); i=0\n"
                         f"while IFS= read -r line; do sleep ${{gaps[$i]:-0}}; printf '%s\\n' \"$line\"; "
                         f"i=$((i+1)); done < {q(str(stdout))}")
        elif stdout.exists():
            lines.append(f"cat {q(str(stdout))}")
        stderr = Path(str(base) + ".stderr.txt")
        if stderr.exists():
            lines.append(f"cat {q(str(stderr))} >&2")
        outfile = Path(str(base) + ".o.txt")
        if outfile.exists():
            # Codex writes its last message to the file named after -o.
            lines.append(f"prev=''; for a in \"$@\"; do if [ \"$prev\" = -o ]; then "
                         f"cat {q(str(outfile))} > \"$a\"; fi; prev=$a; done")
        if after:
            lines.append(after)
        code = meta(agent, name)["exit_code"] if exit_code is None else exit_code
        lines.append(f"exit {code}")
        self.write("\n".join(lines) + "\n")

    def calls(self) -> list[list[str]]:
        found = sorted(self.log_dir.glob("argv.*"), key=lambda p: int(p.suffix[1:]))
        return [[arg.decode() for arg in p.read_bytes().split(b"\0")[:-1]] for p in found]

    def env(self, index: int = -1) -> dict[str, str]:
        found = sorted(self.log_dir.glob("env.*"), key=lambda p: int(p.suffix[1:]))
        pairs = [item.split("=", 1) for item in found[index].read_text().split("\0") if "=" in item]
        return dict(pairs)

    def cwd(self, index: int = -1) -> str:
        found = sorted(self.log_dir.glob("cwd.*"), key=lambda p: int(p.suffix[1:]))
        return found[index].read_text().strip()


def install(bin_dir: Path, name: str, log_dir: Path) -> FakeAgent:
    bin_dir.mkdir(parents=True, exist_ok=True)
    log_dir.mkdir(parents=True, exist_ok=True)
    link = bin_dir / name
    if not link.exists():
        os.symlink(LAUNCHER, link)
    return FakeAgent(name, bin_dir, log_dir)


# grok's and dsh's ACP servers are their CLIs themselves (`grok agent stdio`, `dsh --profile acp`),
# so with the default transport a fake grok or dsh runs over ACP; tests of their one-process-per-turn
# adapters keep them there with `transport = "resume"`.
SERVER_IS_THE_CLI = ("grok", "dsh")


def on_cli(config_text: str = "", names: tuple[str, ...] = SERVER_IS_THE_CLI) -> str:
    """`config_text` with each named agent's table saying `transport = "resume"`."""
    for name in names:
        header = f"[agents.{name}]"
        if header in config_text:
            config_text = config_text.replace(header, f'{header}\ntransport = "resume"', 1)
        else:
            config_text += f'\n{header}\ntransport = "resume"\n'
    return config_text
