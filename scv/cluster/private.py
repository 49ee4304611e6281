"""A private one-machine Ray for one `scv batch --engine ray` run without `--address`: started
with `ray.init(address="local")` (a bare `ray.init()` would join whatever cluster it finds on
the machine: RAY_ADDRESS, the last cluster's file, a running gcs_server), in a temporary folder
and with a token of its own, offering this machine's agents; stopped when the run ends. A
watchdog (scv/cluster/watchdog.py) stops what Ray leaves if the driver is killed."""

import os
import secrets
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from scv.cluster import WORKSPACE_VARIABLE
from scv.cluster.connect import RayMissing, client_environment, import_ray
from scv.cluster.settings import NAMESPACE, ClusterError, slots_resource
from scv.core import oscalls
from scv.core.files import write_atomic

WATCHDOG_WAIT_SECONDS = 15.0


class PrivateRay:
    def __init__(self, slots: dict[str, int], workspace: Path):
        self.temp_dir = tempfile.mkdtemp(prefix="scv-ray-")
        self._sent: set[int] = set()
        token = Path(self.temp_dir) / "token"
        write_atomic(token, secrets.token_hex(32).encode())
        client_environment(token)
        try:
            import_ray()        # a broken install is refused before the watchdog or Ray starts
        except RayMissing:
            shutil.rmtree(self.temp_dir, ignore_errors=True)
            raise
        os.environ[WORKSPACE_VARIABLE] = str(workspace)
        self.watchdog = subprocess.Popen([sys.executable, "-m", "scv.cluster.watchdog", self.temp_dir], stdin=subprocess.PIPE,
                                         stdout=subprocess.DEVNULL, start_new_session=True)
        try:
            import ray
            ray.init(address="local", _temp_dir=self.temp_dir, num_cpus=0,
                     resources={slots_resource(agent): n for agent, n in slots.items()}, include_dashboard=False,
                     namespace=NAMESPACE, log_to_driver=False, logging_level="ERROR")
        except Exception as exc:
            self.stop()
            raise ClusterError(f"a private Ray could not start here ({str(exc).splitlines()[0][:200]})") from None
        self.report()

    def report(self) -> None:
        """Tells the watchdog about Ray processes it does not know yet: this process's descendants
        in its own session (a task's runner has a session of its own and tears itself down)."""
        mine = os.getsid(0)
        lines = []
        for pid in oscalls.REAL.descendants(os.getpid()):
            if pid in self._sent or pid == self.watchdog.pid or oscalls.session_of(pid) != mine:
                continue
            started = oscalls.start_time(pid)
            if started is not None:
                self._sent.add(pid)
                lines.append(f"{pid} {started}\n")
        if lines and self.watchdog.stdin is not None:
            try:
                self.watchdog.stdin.write("".join(lines).encode())
                self.watchdog.stdin.flush()
            except OSError:
                pass

    def stop(self) -> None:
        import ray
        try:
            if ray.is_initialized():
                self.report()
                ray.shutdown()
        finally:
            if self.watchdog.stdin is not None:
                try:
                    self.watchdog.stdin.close()
                except OSError:
                    pass
            try:
                self.watchdog.wait(WATCHDOG_WAIT_SECONDS)
            except subprocess.TimeoutExpired:
                pass
            shutil.rmtree(self.temp_dir, ignore_errors=True)
