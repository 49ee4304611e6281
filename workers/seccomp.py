"""The sandbox's seccomp filters, built with the standard library: classic BPF over the kernel's
`struct seccomp_data`, installed on the calling thread only (a filter without TSYNC is per
thread), so the command started from that thread inherits it and the worker does not.

Seccomp sees a system call's number and arguments, never the memory they point to: it cannot
read the path a `connect()` names, so UNIX sockets are refused where they are made, by
`socket(AF_UNIX, ...)`; `socketpair` stays allowed (pipes between the command's own processes).
Two filters:

- "no-unix": no AF_UNIX socket (so no `connect()` or `bind()` to any socket file), the rest as is;
- "tcp-only": only TCP sockets of IPv4 and IPv6 (whose connect and bind Landlock's TCP rules
  refuse): no UDP (so no DNS), raw, netlink, packet or UNIX socket. The network block of a host
  without network namespaces.

Both refuse io_uring (whose SOCKET operation would make a socket past the filter), the x32
system call numbers, and every call made through another architecture's entry (a 32-bit
`socketcall` would carry its arguments in memory)."""

import ctypes
import errno
import platform
import struct

FILTERS = ("no-unix", "tcp-only")

# (audit arch, socket, io_uring_setup) by machine; io_uring_setup has one number everywhere.
ARCHES = {"x86_64": (0xC000003E, 41, 425), "aarch64": (0xC00000B7, 198, 425)}
X32_BIT = 0x40000000
AF_UNIX, AF_INET, AF_INET6 = 1, 2, 10
SOCK_STREAM, SOCK_TYPE_MASK = 1, 0xF        # the type without SOCK_NONBLOCK and SOCK_CLOEXEC
IPPROTO_TCP = 6

# BPF opcodes (linux/bpf_common.h) and seccomp's return values.
LD_ABS_W, ALU_AND_K, JEQ_K, JGE_K, RET_K = 0x20, 0x54, 0x15, 0x35, 0x06
RET_ALLOW, RET_ERRNO = 0x7FFF0000, 0x00050000
# Offsets in struct seccomp_data: nr, arch, then the six 64-bit arguments (low word first).
NR, ARCH = 0, 4
PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2


def _arg(index: int) -> int:
    return 16 + 8 * index


class Assembler:
    """Instructions with jumps to named labels, resolved into BPF's relative offsets."""

    def __init__(self):
        self.code: list[tuple[int, object, object, int]] = []
        self.labels: dict[str, int] = {}

    def op(self, code: int, k: int, jt: object = 0, jf: object = 0) -> None:
        self.code.append((code, jt, jf, k))

    def label(self, name: str) -> None:
        self.labels[name] = len(self.code)

    def assemble(self) -> bytes:
        out = bytearray()
        for index, (code, jt, jf, k) in enumerate(self.code):
            offsets = [self.labels[j] - index - 1 if isinstance(j, str) else j for j in (jt, jf)]
            if not all(0 <= offset < 256 for offset in offsets):
                raise ValueError(f"jump out of reach at instruction {index}")
            out += struct.pack("=HBBI", code, offsets[0], offsets[1], k)
        return bytes(out)


def program(kind: str, machine: str | None = None) -> bytes:
    """The filter's instructions (8 bytes each) for this machine; ValueError if unknown."""
    if kind not in FILTERS:
        raise ValueError(f"unknown seccomp filter {kind!r}")
    machine = machine or platform.machine()
    if machine not in ARCHES:
        raise ValueError(f"the sandbox's seccomp filter knows no system call numbers for {machine}")
    arch, socket_nr, io_uring_nr = ARCHES[machine]
    refuse = RET_ERRNO | errno.EACCES
    a = Assembler()
    a.op(LD_ABS_W, ARCH)
    a.op(JEQ_K, arch, 0, "refuse")
    a.op(LD_ABS_W, NR)
    a.op(JGE_K, X32_BIT, "refuse", 0)
    a.op(JEQ_K, io_uring_nr, "refuse", 0)
    a.op(JEQ_K, socket_nr, 0, "allow")
    a.op(LD_ABS_W, _arg(0))                     # the domain
    if kind == "no-unix":
        a.op(JEQ_K, AF_UNIX, "refuse", "allow")
    else:
        a.op(JEQ_K, AF_INET, "type", 0)
        a.op(JEQ_K, AF_INET6, "type", "refuse")
        a.label("type")
        a.op(LD_ABS_W, _arg(1))
        a.op(ALU_AND_K, SOCK_TYPE_MASK)
        a.op(JEQ_K, SOCK_STREAM, 0, "refuse")
        a.op(LD_ABS_W, _arg(2))                 # the protocol: the default (TCP) or TCP by name
        a.op(JEQ_K, 0, "allow", 0)
        a.op(JEQ_K, IPPROTO_TCP, "allow", "refuse")
    a.label("allow")
    a.op(RET_K, RET_ALLOW)
    a.label("refuse")
    a.op(RET_K, refuse)
    return a.assemble()


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


_libc = ctypes.CDLL(None, use_errno=True)
_prctl = _libc.prctl


def install(code: bytes) -> None:
    """Loads the filter on the calling thread (which must have no_new_privs or CAP_SYS_ADMIN)."""
    buffer = ctypes.create_string_buffer(code, len(code))
    prog = _SockFprog(len(code) // 8, ctypes.addressof(buffer))
    if _prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"prctl(PR_SET_SECCOMP): {errno.errorcode.get(err, err)}")
