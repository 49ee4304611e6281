# Shared by bin/scv, bin/test, bin/bench and bin/fuzz: make sure the checkout's private virtual
# environment exists and holds the packages setup.cfg names. Sourced, not run.
# The venv is created once; after that nothing here touches the network.

SCV_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SCV_VENV="$SCV_ROOT/.venv"

scv_python() {
  for candidate in python3.13 python3.12 python3.11 python3; do
    if command -v "$candidate" >/dev/null 2>&1 &&
       "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
      command -v "$candidate"; return 0
    fi
  done
  echo "scv: needs Python 3.11 or newer on PATH; install it and run this again." >&2
  return 1
}

# Reads one requirement list out of setup.cfg: "install_requires" or an extra such as "test".
scv_requirements() {
  "$SCV_VENV/bin/python" - "$SCV_ROOT/setup.cfg" "$1" <<'PY'
import configparser, sys
cfg = configparser.ConfigParser()
cfg.read(sys.argv[1])
key = sys.argv[2]
text = cfg["options"][key] if key == "install_requires" else cfg["options.extras_require"][key]
print("\n".join(line.strip() for line in text.splitlines() if line.strip()))
PY
}

# Installs the requirement list $1 unless its stamp says it is already there.
scv_ensure() {
  local what="$1" stamp="$SCV_VENV/.installed-$1"
  if [ ! -x "$SCV_VENV/bin/python" ]; then
    echo "scv: first run: creating a private environment in .venv (one time only)" >&2
    local py; py="$(scv_python)" || return 1
    "$py" -m venv "$SCV_VENV" || { rm -rf "$SCV_VENV"; return 1; }
  fi
  if [ ! -f "$stamp" ] || [ "$SCV_ROOT/setup.cfg" -nt "$stamp" ]; then
    local reqs; reqs="$(scv_requirements "$what")" || return 1
    echo "scv: installing $what requirements into .venv" >&2
    # The pip that venv bundles with Python 3.11 and 3.12.0 (23.2) compares extras without normalising
    # their names (PEP 685), so it warns that lxml has no 'html_clean' extra (lxml 6.1 spells it
    # 'html-clean'); pip 23.3 and later do not. A no-op, offline, when the venv's pip is new enough.
    "$SCV_VENV/bin/python" -m pip install --disable-pip-version-check -q "pip>=23.3" >&2 || return 1
    # shellcheck disable=SC2086
    "$SCV_VENV/bin/python" -m pip install --disable-pip-version-check -q $reqs >&2 || return 1
    touch "$stamp"
  fi
}
