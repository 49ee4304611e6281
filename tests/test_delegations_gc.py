"""`scv agents gc`: old transcripts go, live conversations' stay, the last hour is always kept,
symlinks are never followed, `--dry-run` removes nothing, and ages under an hour are refused."""

import json
import os
import time

import psutil

from scv.core import files
from scv.core.delegations import records
from scv.delegations.transcripts_gc import parse_age
from tests.conftest import run_scv

DAY = 86400


def old(path, days: float, text: str = "{}\n"):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    stamp = time.time() - days * DAY
    os.utime(path, (stamp, stamp))
    return path


def test_gc_keeps_live_recent_and_linked_files(scv_home, tmp_path):
    sessions = scv_home / "agents" / "codex" / "sessions" / "2026" / "01"
    live_id = "01a23691-2d39-76f3-96e6-26722adb2aab"
    me = psutil.Process()
    markers = scv_home / "state" / "conversations"
    files.ensure_folder(markers)
    (markers / live_id).write_text(json.dumps({"pid": me.pid, "start": me.create_time()}))
    dead_id = "11111111-2d39-76f3-96e6-26722adb2aab"
    (markers / dead_id).write_text(json.dumps({"pid": me.pid, "start": me.create_time() - 50}))
    live = old(sessions / f"rollout-2026-01-01-{live_id}.jsonl", 60)
    dead = old(sessions / f"rollout-2026-01-01-{dead_id}.jsonl", 60)
    stale = old(sessions / "rollout-2026-01-02-22222222.jsonl", 40)
    middling = old(sessions / "rollout-2026-01-03-33333333.jsonl", 10)
    recent = old(sessions / "rollout-2026-01-04-44444444.jsonl", 0.5 / 24)     # 30 minutes
    outside = old(tmp_path / "precious" / "keep.jsonl", 90)
    os.symlink(outside.parent, sessions / "linked-dir")
    os.symlink(outside, sessions / "linked-file.jsonl")
    claude = old(scv_home / "agents" / "claude" / ".claude" / "projects" / "p" / "x.jsonl", 60)

    dry = run_scv("agents", "gc", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "codex: would remove 2 file(s)" in dry.stdout and "kept 1 of live conversations" in dry.stdout
    assert "claude: would remove 1 file(s)" in dry.stdout
    assert all(p.exists() for p in (dead, stale, claude))
    as_json = json.loads(run_scv("agents", "gc", "--dry-run", "--json").stdout)
    assert as_json["dry_run"] is True
    codex = next(entry for entry in as_json["agents"] if entry["agent"] == "codex")
    assert sorted(codex["files"]) == sorted([str(dead), str(stale)]) and codex["kept_live"] == 1

    only_codex = run_scv("agents", "gc", "codex")
    assert only_codex.returncode == 0, only_codex.stderr
    assert not dead.exists() and not stale.exists()
    assert live.exists() and middling.exists() and recent.exists() and claude.exists()
    assert outside.exists()
    assert os.path.islink(sessions / "linked-dir") and os.path.islink(sessions / "linked-file.jsonl")

    week = run_scv("agents", "gc", "--older-than", "7d")
    assert week.returncode == 0, week.stderr
    assert not middling.exists() and not claude.exists()
    assert recent.exists() and live.exists() and outside.exists()
    assert not (scv_home / "agents" / "claude" / ".claude" / "projects" / "p").exists()   # emptied folder


def test_gc_refuses_short_ages_and_unknown_agents():
    short = run_scv("agents", "gc", "--older-than", "30m")
    assert short.returncode == 2 and "under an hour" in short.stderr
    garbage = run_scv("agents", "gc", "--older-than", "soon")
    assert garbage.returncode == 2 and "is not an age" in garbage.stderr
    unknown = run_scv("agents", "gc", "zcode")
    assert unknown.returncode == 2 and "choose one of: claude, codex, pi" in unknown.stderr


def test_parse_age_units():
    assert parse_age("1h") == 3600 and parse_age("2w") == 14 * DAY and parse_age("90m") == 5400
