"""What `chat_attach` never sends, decided on a path whose symbolic links are resolved: the
supervisor checks it before approval, and the worker again on the path the kernel actually
opened. The model's input can carry injected instructions, so this keeps a prompt from
mailing out keys by path; it is not a sandbox (a model with `bash` can copy data elsewhere).
"""

import os
import stat
from dataclasses import asdict, dataclass

from scv.core.paths import is_secret_like

MAX_BYTES = 25 * 1024 * 1024

# Under the user's home (compared ignoring case, for case-insensitive file systems).
HOME_SECRETS = (
    ".ssh", ".gnupg", ".aws", ".azure", ".kube", ".docker", ".netrc", ".git-credentials", ".npmrc", ".pypirc",
    ".cargo/credentials", ".cargo/credentials.toml", ".config/gh", ".config/gcloud", ".config/hub",
    ".password-store", ".local/share/keyrings", ".codex", ".claude", ".claude.json", ".grok", ".scv",
)
BROWSER_PROFILES = (
    ".mozilla", ".thunderbird", ".librewolf", ".waterfox", ".config/google-chrome", ".config/chromium",
    ".config/bravesoftware", ".config/microsoft-edge", ".config/vivaldi", ".config/opera", ".config/epiphany",
    "snap/firefox", "snap/chromium", ".var/app/org.mozilla.firefox", ".var/app/com.google.chrome",
    ".var/app/org.chromium.chromium", "library/application support/google/chrome",
    "library/application support/firefox", "library/application support/bravesoftware", "library/safari",
    "library/keychains",
)
HOST_SECRETS = ("/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/ssh", "/etc/sudoers",
                "/etc/sudoers.d", "/root", "/proc", "/sys", "/dev")


@dataclass(frozen=True)
class AttachRules:
    """The folders the rules name, each canonical (symbolic links resolved)."""
    home: str                       # SCV_HOME
    archive: str                    # the chat archive (treated like SCV_HOME wherever it is)
    media: str                      # this chat's media folder
    kept: str                       # this conversation's kept files
    outbox: str
    user_homes: tuple[str, ...]

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "AttachRules":
        return cls(**{**data, "user_homes": tuple(data["user_homes"])})


def under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _home_secret(rules: AttachRules, resolved: str) -> str | None:
    for home in rules.user_homes:
        if not home or home == "/" or not under(resolved, home) or resolved == home:
            continue
        relative = resolved[len(home.rstrip("/")) + 1:].lower()
        for entry in HOME_SECRETS + BROWSER_PROFILES:
            if relative == entry.lower() or relative.startswith(entry.lower() + "/"):
                kind = "a browser profile" if entry in BROWSER_PROFILES else "where credentials and keys live"
                return f"it is under {os.path.join(home, entry)}, {kind}"
    return None


def _scv_place(rules: AttachRules, resolved: str) -> tuple[str | None, str | None]:
    """(refusal, the exempt folder it is in): SCV_HOME and the archive, but this chat's media
    and kept files."""
    for exempt in (rules.media, rules.kept):
        if under(resolved, exempt) and resolved != exempt:
            return None, exempt
    if under(resolved, rules.outbox):
        return "it is in the outbox of files on their way to a chat", None
    if under(resolved, os.path.join(rules.home, "state", "media")):
        return "it is in another chat's media folder; only this chat's own files can be sent back", None
    if under(resolved, rules.archive):
        return ("it is in the chat archive, whose logs and files belong to their conversations; only this "
                "conversation's kept files can be sent"), None
    if under(resolved, rules.home):
        return (f"it is inside SCV's own folder {rules.home} (settings, credentials, agent homes, state), which is "
                "never sent; only this chat's media and kept files there can be"), None
    return None, None


def path_refusal(rules: AttachRules, given: str, resolved: str) -> str | None:
    """The rule that refuses `resolved` (the file `given` leads to), as a clause; None: allowed."""
    for secret in HOST_SECRETS:
        if under(resolved, secret):
            return f"it is under {secret}, which holds host secrets"
    refusal, exempt = _scv_place(rules, resolved)
    if refusal is not None:
        return refusal
    if exempt is None:
        refusal = _home_secret(rules, resolved)
        if refusal is not None:
            return refusal
    named = resolved[len(exempt.rstrip("/")) + 1:] if exempt else resolved
    parts = [p for p in named.split("/") if p] + [os.path.basename(given.rstrip("/"))]
    if is_secret_like([p for p in parts if p]):
        return ("its name looks like it holds secrets (a .env file, a key or certificate, credentials, an SSH key), "
                "which are never sent")
    return None


def file_refusal(info: os.stat_result) -> str | None:
    if not stat.S_ISREG(info.st_mode):
        return "it is not a regular file (a directory, FIFO, device or socket); only regular files can be sent"
    if info.st_size == 0:
        return "it is empty, so there is nothing to send"
    if info.st_size > MAX_BYTES:
        return f"it is {info.st_size} bytes, over the {MAX_BYTES // (1024 * 1024)} MiB a chat file may have"
    return None


def refused(given: str, clause: str) -> str:
    return f"chat_attach refused {given}: {clause}"
