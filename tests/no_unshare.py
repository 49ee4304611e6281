"""Runs a command the way Docker's default seccomp profile or Ubuntu's AppArmor restriction of
user namespaces would: `python -m tests.no_unshare CMD...` loads a real seccomp filter refusing
`unshare` (EPERM), then execs CMD, which inherits it with everything it starts."""

import ctypes
import errno
import os
import platform
import sys

from workers import seccomp

UNSHARE = {"x86_64": 272, "aarch64": 97}


def refuse_unshare() -> None:
    arch = seccomp.ARCHES[platform.machine()][0]
    a = seccomp.Assembler()
    a.op(seccomp.LD_ABS_W, seccomp.ARCH)
    a.op(seccomp.JEQ_K, arch, 0, "allow")
    a.op(seccomp.LD_ABS_W, seccomp.NR)
    a.op(seccomp.JEQ_K, UNSHARE[platform.machine()], 0, "allow")
    a.op(seccomp.RET_K, seccomp.RET_ERRNO | errno.EPERM)
    a.label("allow")
    a.op(seccomp.RET_K, seccomp.RET_ALLOW)
    if ctypes.CDLL(None, use_errno=True).prctl(38, 1, 0, 0, 0) != 0:     # PR_SET_NO_NEW_PRIVS
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
    seccomp.install(a.assemble())


if __name__ == "__main__":
    refuse_unshare()
    os.execvp(sys.argv[1], sys.argv[1:])
