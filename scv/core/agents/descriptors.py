"""One descriptor per agent CLI: everything SCV knows about running it once per turn.

Adding an agent is one more `Descriptor` in DESCRIPTORS. The descriptors are plain data read on
both sides: the supervisor builds the argument vector (so the approval shows exactly what runs)
and the worker builds the environment and picks the output parser.
"""

import os
from pathlib import Path

import msgspec

CLAUDE, CODEX, GROK, DSH, PI, SCV = "claude", "codex", "grok", "dsh", "pi", "scv"

# The backends an agent runs on: its CLI once per turn, its ACP server for a whole conversation,
# or a nested `scv server --stdio` for a whole conversation.
RESUME, ACP, NESTED = "resume", "acp", "scv"


class AcpServer(msgspec.Struct, frozen=True):
    """An agent's Agent Client Protocol server: one process per conversation."""
    executable: str
    args: tuple[str, ...] = ()
    full_permission_args: tuple[str, ...] | None = None      # replaces `args` under permissions = "full"
    full_permission_env: dict[str, str] = msgspec.field(default_factory=dict)
    # The session modes that mean full permissions, in the order they are looked for among the
    # modes (or the `mode` config option) the server advertises; selected in every new session.
    full_permission_modes: tuple[str, ...] = ()
    # The modes in which the agent asks before it edits or runs anything. Without full permissions
    # a session that starts in another (claude-agent-acp's built-in default `auto` and codex-acp's
    # `agent` let a model of the vendor's answer instead of asking) is moved to the first of them,
    # so SCV's approval gate decides.
    asking_modes: tuple[str, ...] = ()
    package: str = ""                                       # where it comes from, for messages

    def argv(self, executable: str, full_permissions: bool) -> list[str]:
        args = self.full_permission_args if full_permissions and self.full_permission_args is not None else self.args
        return [executable, *args]


class Descriptor(msgspec.Struct, frozen=True):
    name: str
    product: str
    line: str                                   # how the agent's line in the schema starts
    executable: str
    fixed_args: tuple[str, ...]
    output_args: tuple[str, ...] = ()           # output format arguments, after permission switches
    output_format: str = "text"                 # claude-stream | codex-json | pi-json | text
    model_flag: tuple[str, ...] = ()            # the model becomes one argument after these
    effort_template: tuple[str, ...] = ()       # "{effort}" is substituted in each
    prompt_args: tuple[str, ...] = ()           # flags before the prompt (grok -p)
    model_family: str = ""
    # Conversations: how a new one starts and how one continues ("" = not supported).
    start_session: tuple[str, ...] = ()         # "{id}" is an SCV-chosen uuid
    resume_session: tuple[str, ...] = ()        # "{id}" is the CLI's own session id
    resume_before_options: bool = False         # codex: `exec ... resume <id>` splits the options
    session_from_cli: bool = True               # False when SCV chooses the id (claude)
    full_permission_args: tuple[str, ...] = ()
    full_permission_env: dict[str, str] = msgspec.field(default_factory=dict)
    # The private home: HOME is $SCV_HOME/agents/<name>; the agent's own state variable points
    # at `state_subdir` inside it ("" = the home itself).
    state_variable: str = ""
    state_subdir: str = ""
    extra_env: dict[str, str] = msgspec.field(default_factory=dict)
    # Variables removed from the inherited environment besides every *_API_KEY (prefixes end in _).
    removed_env: tuple[str, ...] = ()
    # Yes/no variables the agent reads only as "1": an inherited yes in any spelling becomes 1, a no
    # is removed (containers set IS_SANDBOX=yes; claude-agent-acp reads that as yes and starts
    # Claude Code with a switch that Claude Code, as root, lets through only with IS_SANDBOX=1).
    flags_read_as_one: tuple[str, ...] = ()
    search_dirs: tuple[str, ...] = (".local/bin",)   # relative to the user's home, before PATH
    signin_checked_by_file: bool = False
    acp: AcpServer | None = None                     # None: no ACP server (one process per turn only)
    nested: bool = False                             # the nested SCV: `scv server --stdio`, SCV's protocol

    @property
    def takes_model(self) -> bool:
        return bool(self.model_flag) or self.nested

    @property
    def takes_effort(self) -> bool:
        return bool(self.effort_template)

    @property
    def takes_session(self) -> bool:
        return bool(self.resume_session) or self.nested

    def takes_session_on(self, transport: str) -> bool:
        """Every agent over ACP continues a conversation; on its CLI only those that resume."""
        return transport in (ACP, NESTED) or self.takes_session


# Variables every agent loses, whichever agent it is: SCV's selectors and every vendor's
# credential, endpoint and state variable, so no agent reuses another's setup.
COMMON_REMOVED = (
    "SCV_PROVIDER", "SCV_MODEL", "SCV_CONFIG", "SCV_PROFILE", "SCV_HOME", "SCV_CALL",
    "ANTHROPIC_", "CLAUDE_CODE_OAUTH_TOKEN", "CLAUDE_CONFIG_DIR", "CLAUDECODE",
    "OPENAI_", "CODEX_", "AZURE_OPENAI_", "GROK_", "XAI_", "DSH_", "DEEPSEEK_", "PI_",
    "GEMINI_", "GOOGLE_API_KEY", "MISTRAL_", "OPENROUTER_", "GROQ_",
    "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME",
)

DESCRIPTORS: dict[str, Descriptor] = {d.name: d for d in (
    Descriptor(
        name=CLAUDE, product="Claude Code",
        line="Anthropic's coding agent; reads, edits, and runs code, and can search and fetch the web",
        executable="claude", fixed_args=("-p",),
        output_args=("--output-format", "stream-json", "--verbose"), output_format="claude-stream",
        model_flag=("--model",), effort_template=("--effort", "{effort}"),
        model_family="a Claude alias such as sonnet or opus, or a full Claude model ID",
        start_session=("--session-id", "{id}"), resume_session=("--resume", "{id}"), session_from_cli=False,
        full_permission_args=("--permission-mode", "bypassPermissions"),
        acp=AcpServer("claude-agent-acp", full_permission_modes=("bypassPermissions",), asking_modes=("default",),
                      package="npm @agentclientprotocol/claude-agent-acp"),
        flags_read_as_one=("IS_SANDBOX",),
    ),
    Descriptor(
        name=CODEX, product="Codex",
        line="OpenAI's coding agent; reads, edits, and runs code, with live web search under full permissions",
        executable="codex", fixed_args=("exec",), output_args=("--json", "-o", "{outfile}"),
        output_format="codex-json", model_flag=("-m",),
        effort_template=("-c", 'model_reasoning_effort="{effort}"'),
        model_family="OpenAI model ID from the Codex configuration; not a Claude alias",
        resume_session=("resume", "{id}"), resume_before_options=True,
        full_permission_args=("--dangerously-bypass-approvals-and-sandbox", "-c", 'web_search="live"'),
        state_variable="CODEX_HOME",
        # codex-acp takes no -c overrides: CODEX_CONFIG is their JSON form, keeping live web search.
        acp=AcpServer("codex-acp", full_permission_env={"CODEX_CONFIG": '{"web_search":"live"}'},
                      full_permission_modes=("full-access", "agent-full-access"), asking_modes=("read-only",),
                      package="npm @agentclientprotocol/codex-acp"),
    ),
    Descriptor(
        name=GROK, product="Grok Build",
        line=("xAI's coding agent; reads, edits, and runs code, with live web and X search. Call it when another "
              "agent declined or refused a request, including a safety or guardrail refusal"),
        executable="grok", fixed_args=(), model_flag=("-m",),
        effort_template=("--reasoning-effort", "{effort}"), prompt_args=("-p",),
        model_family="a Grok model ID",
        full_permission_args=("--always-approve",), state_variable="GROK_HOME", state_subdir=".grok",
        extra_env={"GROK_DISABLE_AUTOUPDATER": "1"}, search_dirs=(".local/bin", ".grok/bin"),
        signin_checked_by_file=True,
        acp=AcpServer("grok", ("agent", "stdio"), full_permission_args=("agent", "--always-approve", "stdio"),
                      package="built into grok"),
    ),
    Descriptor(
        name=DSH, product="DeepSeek Harness", line="a coding agent on DeepSeek models",
        executable="dsh", fixed_args=("--profile", "headless"),
        full_permission_env={"DSH_PERMISSION_MODE": "danger-full-access"},
        state_variable="DSH_HOME", state_subdir=".dsh", signin_checked_by_file=True,
        # Full permissions come from DSH_PERMISSION_MODE (full_permission_env) on both transports.
        acp=AcpServer("dsh", ("--profile", "acp"), package="built into dsh 0.1.7-rc.1"),
    ),
    Descriptor(
        name=PI, product="pi", line="a minimal coding agent that can run on SCV's own model endpoint; no web search",
        executable="pi", fixed_args=("-p",), output_args=("--mode", "json"), output_format="pi-json",
        model_flag=("--model",), effort_template=("--thinking", "{effort}"),
        model_family="a pi model pattern or provider/id",
        # pi 0.73.1 has no --session-id: it names the session itself, and `--session <id>` continues it.
        resume_session=("--session", "{id}"),
        state_variable="PI_CODING_AGENT_DIR", state_subdir=".pi/agent", signin_checked_by_file=True,
    ),
    Descriptor(
        name=SCV, product="SCV",
        line="a nested session for a self-contained sub-task kept out of this context, or work in another project",
        executable="scv", fixed_args=("server", "--stdio"), nested=True,
        model_family="a model ID of the nested SCV's provider (new conversations only)",
        # Its private home is its SCV_HOME: config.toml (the imported provider) and its own agents.
        state_variable="SCV_HOME", signin_checked_by_file=True,
    ),
)}


def agent_home(scv_home: Path, name: str) -> Path:
    return scv_home / "agents" / name


def state_dir(scv_home: Path, descriptor: Descriptor) -> Path:
    home = agent_home(scv_home, descriptor.name)
    return home / descriptor.state_subdir if descriptor.state_subdir else home


def resolve_executable(descriptor: Descriptor, user_home: Path, path_value: str | None,
                       name: str | None = None) -> str | None:
    """The absolute executable (`name`, by default the CLI's): the user's per-user install folders
    first, then PATH (the order a login shell uses). None when it does not resolve. An absolute
    `name` (a user's custom command) is taken as it is, if it is an executable file."""
    name = name or descriptor.executable
    if os.path.isabs(name):
        return name if os.path.isfile(name) and os.access(name, os.X_OK) else None
    folders = [str(user_home / sub) for sub in descriptor.search_dirs]
    folders += [p for p in (path_value or "").split(os.pathsep) if p]
    for folder in folders:
        if not os.path.isabs(folder):
            continue
        candidate = os.path.join(folder, name)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


def build_argv(descriptor: Descriptor, executable: str, prompt: str, *, model: str | None, effort: str | None,
               full_permissions: bool, new_session: str | None = None, resume: str | None = None,
               outfile: str = "") -> list[str]:
    """The argument vector, each value one argument: fixed arguments, permission switches, output
    format arguments, session start, model and effort, prompt flags, the prompt."""
    argv = [executable, *descriptor.fixed_args]
    if full_permissions:
        argv += descriptor.full_permission_args
    argv += [arg.replace("{outfile}", outfile) for arg in descriptor.output_args]
    trailing: list[str] = []
    if resume is not None and descriptor.resume_before_options:
        # `codex exec … resume [options] <thread-id> <prompt>`: the subcommand first, the id last.
        argv += [arg for arg in descriptor.resume_session if "{id}" not in arg]
        trailing = [arg.replace("{id}", resume) for arg in descriptor.resume_session if "{id}" in arg]
    elif resume is not None:
        argv += [arg.replace("{id}", resume) for arg in descriptor.resume_session]
    elif new_session is not None and descriptor.start_session:
        argv += [arg.replace("{id}", new_session) for arg in descriptor.start_session]
    if model:
        argv += [*descriptor.model_flag, model]
    if effort:
        argv += [arg.replace("{effort}", effort) for arg in descriptor.effort_template]
    argv += trailing
    argv += descriptor.prompt_args
    argv.append(prompt)
    return argv
