"""The per-test time limit of tests/conftest.py, in a `python -m pytest` of its own: a test that
hangs (in its body or in a fixture's teardown) fails with the stacks of its threads, and the run
goes on to the next test."""

import re
import subprocess
import sys

from tests.conftest import ROOT, scv_env

HANGING = '''
import os
import threading

import pytest


@pytest.fixture
def stuck_teardown():
    yield
    read_end, _ = os.pipe()
    os.read(read_end, 1)            # nothing is ever written: a hang in teardown


@pytest.mark.time_limit(1)
def test_hangs():
    threading.Thread(target=threading.Event().wait, name="stuck-helper", daemon=True).start()
    read_end, _ = os.pipe()
    os.read(read_end, 1)            # nothing is ever written


def test_runs_after_the_hang():
    open("ran-after-the-hang", "w").close()     # the outer test looks for these files


@pytest.mark.time_limit(1)
def test_hangs_in_teardown(stuck_teardown):
    open("ran-before-its-teardown-hung", "w").close()


def test_runs_last():
    open("ran-last", "w").close()
'''


def test_a_hanging_test_fails_with_its_stacks_and_the_run_goes_on(tmp_path):
    (tmp_path / "test_hanging.py").write_text(HANGING)
    # The suite's own conftest as a plugin, and setup.cfg for its markers; nothing else of the suite.
    proc = subprocess.run([sys.executable, "-m", "pytest", "-c", str(ROOT / "setup.cfg"), "-p", "tests.conftest",
                           "--rootdir", str(tmp_path), "-rfE", "test_hanging.py"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120, env=scv_env(COLUMNS="400"))
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "1 failed, 3 passed, 1 error" in out      # the tests after each hang ran, and passed
    assert {p.name for p in tmp_path.glob("ran-*")} == {"ran-after-the-hang", "ran-before-its-teardown-hung",
                                                         "ran-last"}
    assert "FAILED test_hanging.py::test_hangs - Failed: test_hanging.py::test_hangs ran past its time limit of 1 s" in out
    assert "ERROR test_hanging.py::test_hangs_in_teardown - Failed: test_hanging.py::test_hangs_in_teardown ran past" in out
    # The stacks: the main thread inside the test's read, and the helper thread the test started.
    assert "thread stuck-helper:" in out
    assert re.search(r'test_hanging.py", line \d+, in test_hangs\nE +os\.read\(read_end, 1\)', out)
    assert re.search(r'test_hanging.py", line \d+, in stuck_teardown\nE +os\.read\(read_end, 1\)', out)
    # faulthandler's dump of every thread, the backstop for a main thread that never runs Python again.
    assert re.search(r'Current thread 0x[0-9a-f]+ \(most recent call first\):\n  File "[^"]*test_hanging.py", line \d+ '
                     r'in test_hangs', out)
    assert re.search(r'\n  File "[^"]*test_hanging.py", line \d+ in stuck_teardown', out)
