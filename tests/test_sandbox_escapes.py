"""Issue 24's escapes through real sandboxed `bash` calls: a file's metadata outside the writable
folders (mode, times, owner, extended attributes) and a UNIX socket by path in another folder
are refused, while the same operations inside the workspace, socketpair and the call's own
temporary folder still work."""

import os
import socket
import stat
import threading

import pytest

from tests.sandbox_fakes import PYTHON, bash, needs_landlock, needs_mount_namespace, sandbox_config

pytestmark = [needs_landlock, needs_mount_namespace]


@pytest.fixture
def outside(tmp_path):
    place = tmp_path / "outside"
    place.mkdir()
    victim = place / "victim"
    victim.write_text("original\n")
    victim.chmod(0o644)
    os.utime(victim, (1_000_000_000, 1_000_000_000))
    return place


def _python(script: str) -> str:
    return f"{PYTHON} -c \"{script}\""


def test_metadata_outside_the_writable_folders_cannot_be_changed(make_runner, outside):
    victim = outside / "victim"
    before, folder_mode = os.stat(victim), stat.S_IMODE(os.stat(outside).st_mode)
    try:
        os.setxattr(outside, "user.scv-probe", b"1")     # this file system takes user attributes
        xattrs = True
    except OSError:
        xattrs = False
    runner = make_runner(sandbox_config())
    attempts = {
        "chmod": f"chmod 777 {victim}",
        "utime": f"touch -d 2001-01-01 {victim}",
        "chown": f"chown $(id -u):$(id -g) {victim}",
        "setxattr": _python(f"import os; os.setxattr('{victim}', 'user.scv', b'x')"),
        "chmod-dir": f"chmod 777 {outside}",
    }
    for name, command in attempts.items():
        ok, value = bash(runner, command)
        assert not ok and "Read-only file system" in value["output"], (name, value)
    after = os.stat(victim)
    assert stat.S_IMODE(after.st_mode) == 0o644 and after.st_mtime == before.st_mtime == 1_000_000_000
    assert stat.S_IMODE(os.stat(outside).st_mode) == folder_mode != 0o777
    if xattrs:
        assert "user.scv" not in os.listxattr(victim)


def test_metadata_inside_the_workspace_and_tmpdir_still_changes(make_runner, workspace):
    runner = make_runner(sandbox_config())
    ok, value = bash(runner, "printf 'echo ran\\n' > run.sh && chmod +x run.sh && ./run.sh && "
                             "touch -d 2001-01-01 run.sh && chown $(id -u) run.sh && "
                             "echo t > $TMPDIR/t && chmod 600 $TMPDIR/t && echo x > /dev/null && echo done")
    assert ok and value["output"] == "ran\ndone\n", value
    made = os.stat(workspace / "run.sh")
    assert made.st_mode & stat.S_IXUSR and made.st_mtime < 1_000_000_000 + 10 * 365 * 86400


class UnixServer:
    """A server on a socket file that counts who connected."""

    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(str(path))
        self.sock.listen(4)
        self.connections = 0
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            conn.close()

    def close(self):
        self.sock.close()


@pytest.mark.parametrize("network", [False, True])
def test_a_unix_socket_in_another_folder_is_unreachable(make_runner, outside, network):
    door = outside / "door.sock"
    server = UnixServer(door)
    try:
        runner = make_runner(sandbox_config(network=network))
        connect = _python(f"import socket; s = socket.socket(socket.AF_UNIX); s.connect('{door}'); print('reached')")
        ok, value = bash(runner, connect)
        assert not ok and "reached" not in value["output"] and "Permission denied" in value["output"], value
        # Nor through a link to it from the workspace, nor with socat-like tools' datagram sockets.
        ok, value = bash(runner, f"ln -s {door} near.sock && " + connect.replace(str(door), "near.sock"))
        assert not ok and "Permission denied" in value["output"], value
        dgram = _python(f"import socket; s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); "
                        f"s.sendto(b'x', '{door}'); print('sent')")
        ok, value = bash(runner, dgram)
        assert not ok and "Permission denied" in value["output"], value
        assert server.connections == 0
        # A control: the same command unsandboxed reaches it, so the refusal is the sandbox's.
        ok, value = bash(make_runner(), connect)
        assert ok and "reached" in value["output"]
    finally:
        server.close()


def test_unix_sockets_inside_the_workspace_are_refused_too_but_socketpair_works(make_runner, workspace):
    runner = make_runner(sandbox_config())
    ok, value = bash(runner, _python("import socket; s = socket.socket(socket.AF_UNIX); s.bind('own.sock')"))
    assert not ok and "Permission denied" in value["output"] and not (workspace / "own.sock").exists()
    ok, value = bash(runner, _python("import socket; a, b = socket.socketpair(); a.sendall(b'pair'); "
                                     "print(b.recv(4).decode())"))
    assert ok and value["output"] == "pair\n", value
