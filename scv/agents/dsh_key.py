"""DeepSeek Harness signs in with an API key only: `refs.DEEPSEEK_API_KEY` in its own credential
file, `.dsh/.credentials.yaml` in its private home. SCV writes that small YAML file itself."""

import os
from pathlib import Path

from scv.delegations.records import write_atomic
from scv.errors import ScvError
from workers.agents.descriptors import DESCRIPTORS, DSH, state_dir

CREDENTIALS = ".credentials.yaml"


def credentials_path(scv_home: Path) -> Path:
    return state_dir(scv_home, DESCRIPTORS[DSH]) / CREDENTIALS


def _yaml_string(value: str) -> str:
    """A YAML double-quoted scalar; keys are checked printable without spaces beforehand."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def credentials_yaml(key: str) -> bytes:
    return ("# Written by `scv agents login dsh`.\nrefs:\n  DEEPSEEK_API_KEY: " + _yaml_string(key) + "\n").encode()


def store_key(scv_home: Path, key: str) -> Path:
    """Written atomically with mode 0600 (folders 0700); replaces the whole file."""
    path = credentials_path(scv_home)
    write_atomic(path, credentials_yaml(key))
    return path


def remove_key(scv_home: Path) -> bool:
    try:
        os.unlink(credentials_path(scv_home))
    except FileNotFoundError:
        return False
    except OSError as err:
        raise ScvError(f"could not remove {credentials_path(scv_home)} ({err.strerror})") from None
    return True
