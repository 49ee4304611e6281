"""The workspace path validator: lexical checks made before approval, on the supervisor side.

A path is workspace-relative UTF-8 with no `..`, no absolute form, no NUL and no over-long
component. Nothing is "cleaned up": a path that is not acceptable is refused with a sentence
saying why. Containment against symlinks is enforced again at use by `scv.core.safe_open`.
"""

from scv.core.errors import RefusedError

MAX_COMPONENT_BYTES = 255
MAX_PATH_BYTES = 4096

# Directory names under which everything counts as secret-like.
SECRET_DIRS = frozenset({
    ".ssh", ".gnupg", ".aws", ".azure", ".kube", ".docker", ".password-store", ".codex",
    ".claude", ".grok", ".scv",
})
SECRET_NAMES = frozenset({
    ".netrc", ".git-credentials", ".npmrc", ".pypirc", ".claude.json", "credentials",
    "credentials.toml", "id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", "id_ecdsa_sk",
    "id_ed25519_sk", "shadow", "gshadow",
})
SECRET_SUFFIXES = (".pem", ".key", ".p12", ".pfx", ".kdbx", ".keystore", ".jks")
SECRET_WORDS = ("credential", "private_key", "secret")


def split_relative(path: str) -> list[str]:
    """Checks a workspace-relative path and returns its components (`.` dropped).

    Raises RefusedError with a sentence naming the problem.
    """
    if not isinstance(path, str) or path == "":
        raise RefusedError("path is empty; give a file path relative to the workspace")
    if "\x00" in path:
        raise RefusedError("path contains a NUL byte; remove it")
    try:
        raw = path.encode("utf-8")
    except UnicodeEncodeError:
        raise RefusedError("path is not valid UTF-8 (it holds an unpaired surrogate); use the real file name") from None
    if len(raw) > MAX_PATH_BYTES:
        raise RefusedError(f"path is {len(raw)} bytes long, over the {MAX_PATH_BYTES}-byte limit")
    if path.startswith("/"):
        raise RefusedError(f"path {path!r} is absolute; give it relative to the workspace")
    if path.startswith("~"):
        raise RefusedError(f"path {path!r} starts with '~', which is not expanded; give it relative to the workspace")
    parts = []
    for part in path.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            raise RefusedError(f"path {path!r} contains '..'; give a path that stays inside the workspace")
        if len(part.encode("utf-8")) > MAX_COMPONENT_BYTES:
            raise RefusedError(f"a component of path {path!r} is over {MAX_COMPONENT_BYTES} bytes")
        parts.append(part)
    if not parts:
        raise RefusedError(f"path {path!r} names the workspace itself; give a file inside it")
    return parts


def names_directory(path: str) -> bool:
    """True when the path ends in '/' (or '/.'): POSIX then requires its last name to be a directory,
    so `ok.txt/` is ENOTDIR, not `ok.txt`. split_relative drops that ending; callers keep this flag."""
    return "/" in path and path.rsplit("/", 1)[1] in ("", ".")


def is_secret_like(parts: list[str]) -> bool:
    """A name heuristic for visibility (it raises the risk); not a confidentiality boundary."""
    for index, part in enumerate(parts):
        lower = part.lower()
        if index < len(parts) - 1 and lower in SECRET_DIRS:
            return True
        if lower in SECRET_DIRS or lower in SECRET_NAMES:
            return True
        if lower == ".env" or lower.startswith(".env.") or lower.endswith(".env"):
            return True
        if lower.endswith(SECRET_SUFFIXES):
            return True
        if any(word in lower for word in SECRET_WORDS):
            return True
    return False
