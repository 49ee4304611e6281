"""The Linux mechanism of the sandbox: Landlock, a private mount namespace and a network
namespace, through ctypes (landlock_create_ruleset/add_rule/restrict_self, prctl, unshare, mount).

Only the command is sandboxed, never the worker: the worker builds the ruleset, then a short-lived
thread enters the namespaces, sets no_new_privs and restricts itself (all of which hold per
thread on Linux) and starts the command with vfork, so the child inherits that thread's
restrictions while the worker's own thread keeps its rights to collect output and stop the
process group. A Python `preexec_fn` would do the same in the forked child, but it forces a
full fork of the worker: about 4 ms a call here, against about 0.1 ms for the thread.

A worker without CAP_SYS_ADMIN first enters its own user namespace (its uid and gid mapped to
themselves, so it keeps every right it had), which lets the thread make the mount and network
namespaces. Run as `python -m workers.sandbox_linux --probe` it prints what this kernel allows.
"""

import ctypes
import errno
import os
import queue
import stat
import sys
import tempfile
import _thread
from typing import Callable

import msgspec

from scv.core.sandbox import rules as ll
from scv.core.sandbox.policy import KernelSupport, SandboxPlan
from workers import seccomp

SYS_LANDLOCK_CREATE_RULESET, SYS_LANDLOCK_ADD_RULE, SYS_LANDLOCK_RESTRICT_SELF = 444, 445, 446
SYS_MOUNT_SETATTR, AT_FDCWD, AT_RECURSIVE, MOUNT_ATTR_RDONLY = 442, -100, 0x8000, 0x1
LANDLOCK_CREATE_RULESET_VERSION = 1
LANDLOCK_RULE_PATH_BENEATH = 1
PR_SET_DUMPABLE, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS = 4, 24, 38
CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWNET = 0x00020000, 0x10000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 0x1, 0x2, 0x4, 0x8
MS_REMOUNT, MS_BIND, MS_REC, MS_SLAVE = 0x20, 0x1000, 0x4000, 0x80000
CAP_SYS_ADMIN = 21
# What a command run as root keeps (Docker's default set, less mknod, raw sockets and setfcap):
# enough to own and change files, not to load modules, reach raw devices or other processes'
# memory, or open files by handle past the path checks (CAP_DAC_READ_SEARCH).
KEPT_CAPABILITIES = frozenset({0, 1, 3, 4, 5, 6, 7, 8, 10, 18, 29})   # chown dac_override fowner fsetid kill
#                                                 setgid setuid setpcap net_bind_service sys_chroot audit_write
EMPTY_TMPFS = b"size=4k,nr_inodes=2,mode=000"

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
# Looked up now, in the fork point, rather than in every worker.
_unshare, _mount, _prctl, _syscall = _libc.unshare, _libc.mount, _libc.prctl, _libc.syscall


class RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


class MountAttr(ctypes.Structure):
    _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64), ("propagation", ctypes.c_uint64),
                ("userns_fd", ctypes.c_uint64)]


READ_ONLY, READ_WRITE = MountAttr(MOUNT_ATTR_RDONLY, 0, 0, 0), MountAttr(0, MOUNT_ATTR_RDONLY, 0, 0)


def _set_read_only(path: bytes, read_only: bool, recursive: bool) -> None:
    attr = READ_ONLY if read_only else READ_WRITE
    _check(_syscall(SYS_MOUNT_SETATTR, AT_FDCWD, path, AT_RECURSIVE if recursive else 0, ctypes.byref(attr),
                    ctypes.c_size_t(ctypes.sizeof(attr))), f"mount_setattr({os.fsdecode(path)})")


class SandboxError(Exception):
    """The sandbox could not be applied; the command must not run."""


def _check(result: int, what: str) -> int:
    if result < 0:
        code = ctypes.get_errno()
        raise OSError(code, f"{what}: {os.strerror(code)}")
    return result


# --- what the kernel offers -------------------------------------------------------------------

def landlock_abi() -> tuple[int, str | None]:
    abi = _syscall(SYS_LANDLOCK_CREATE_RULESET, None, ctypes.c_size_t(0),
                        ctypes.c_uint32(LANDLOCK_CREATE_RULESET_VERSION))
    if abi >= 1:
        return abi, None
    code = ctypes.get_errno()
    if code == errno.EOPNOTSUPP:
        return 0, "Landlock is built into this kernel but not enabled (add landlock to the lsm= boot parameter)"
    if code == errno.ENOSYS:
        return 0, "this kernel has no Landlock (it needs Linux 5.13 or later built with CONFIG_SECURITY_LANDLOCK)"
    return 0, f"Landlock cannot be used here ({os.strerror(code)})"


def has_cap_sys_admin() -> bool:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("CapEff:"):
                return bool(int(line.split()[1], 16) >> CAP_SYS_ADMIN & 1)
    return False


def enter_user_namespace() -> None:
    """Enters a new user namespace with this uid and gid mapped to themselves (single-threaded
    callers only: the kernel refuses it to a process with threads)."""
    uid, gid = os.geteuid(), os.getegid()
    _check(_unshare(CLONE_NEWUSER), "unshare(CLONE_NEWUSER)")
    for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
        with open(f"/proc/self/{name}", "w") as fh:
            fh.write(text)


def _last_capability() -> int:
    try:
        with open("/proc/sys/kernel/cap_last_cap") as fh:
            return int(fh.read())
    except (OSError, ValueError):
        return 40


LAST_CAPABILITY = _last_capability()


def ancestors() -> list[int]:
    """This process's ancestors, nearest first, up to (not including) init."""
    found, pid = [], os.getppid()
    while pid > 1:
        found.append(pid)
        try:
            fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY | os.O_CLOEXEC)
            try:
                pid = int(os.read(fd, 4096).rsplit(b")", 1)[1].split(None, 2)[1])
            finally:
                os.close(fd)
        except (OSError, ValueError, IndexError):
            break
    return found


def probe() -> KernelSupport:
    """Tries each step on this process (run it in a throwaway one: it is left in the namespaces)."""
    abi, landlock_error = landlock_abi()
    found = {"landlock_abi": abi, "landlock_error": landlock_error, "cap_sys_admin": has_cap_sys_admin()}
    if not found["cap_sys_admin"]:
        try:
            enter_user_namespace()
            found["user_namespace"] = True
        except OSError as err:
            found["user_namespace_error"] = (
                f"user namespaces are not allowed here ({err.strerror}); see kernel.unprivileged_userns_clone, "
                "user.max_user_namespaces and kernel.apparmor_restrict_unprivileged_userns")
    try:
        _check(_unshare(CLONE_NEWNS), "unshare(CLONE_NEWNS)")
        _check(_mount(None, b"/", None, MS_REC | MS_SLAVE, None), "mount(MS_SLAVE)")
        scratch = tempfile.gettempdir().encode()
        _check(_mount(b"tmpfs", scratch, b"tmpfs", MS_RDONLY, EMPTY_TMPFS), "mount(tmpfs)")
        found["mount_namespace"] = True
    except OSError as err:
        found["mount_namespace_error"] = f"a private mount namespace cannot be made here ({err.strerror})"
    try:
        _check(_unshare(CLONE_NEWNET), "unshare(CLONE_NEWNET)")
        found["network_namespace"] = True
    except OSError as err:
        found["network_namespace_error"] = f"a network namespace cannot be made here ({err.strerror})"
    return KernelSupport(**found)


# --- applying a policy ------------------------------------------------------------------------

def build_ruleset(rules: list[ll.Rule], abi: int, network: bool) -> int:
    """A Landlock ruleset fd (close-on-exec) holding every rule."""
    attr = RulesetAttr(ll.handled_fs(abi), ll.handled_net(abi, network), ll.scoped(abi))
    ruleset = _check(_syscall(SYS_LANDLOCK_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr)),
                                   ctypes.c_uint32(0)), "landlock_create_ruleset")
    try:
        add_rules(ruleset, rules)
    except BaseException:
        os.close(ruleset)
        raise
    return ruleset


def _open_as_planned(path: str) -> int | None:
    """An O_PATH fd on `path` if it still names what the plan resolved: None when it is gone, or
    when a step of it has become a symbolic link since (the fd would name another file)."""
    try:
        fd = os.open(path, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC)
    except (FileNotFoundError, NotADirectoryError):
        return None
    try:
        if os.readlink(f"/proc/self/fd/{fd}") == path and not stat.S_ISLNK(os.fstat(fd).st_mode):
            return fd
    except OSError:
        pass
    os.close(fd)
    return None


def add_rules(ruleset: int, rules: list[ll.Rule]) -> None:
    """Every rule is a grant: one whose path is gone since the plan (another process removed a
    sibling of a hidden folder) or now passes through a link is left out, never refused."""
    for rule in rules:
        fd = _open_as_planned(rule.path)
        if fd is None:
            continue
        try:
            beneath = PathBeneathAttr(rule.rights, fd)
            _check(_syscall(SYS_LANDLOCK_ADD_RULE, ruleset, LANDLOCK_RULE_PATH_BENEATH, ctypes.byref(beneath),
                                 ctypes.c_uint32(0)), f"landlock_add_rule({rule.path})")
        finally:
            os.close(fd)


def _pin(paths: list[str]) -> list[tuple[str, int]]:
    """(path, O_PATH fd) for each path: an inode held open keeps its number, so comparing it
    with the path's later says whether the path still names that file."""
    pinned = []
    for path in paths:
        try:
            pinned.append((path, os.open(path, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC)))
        except OSError:
            pass
    return pinned


def namespace_flags(hide_with: str, network_with: str) -> int:
    return (CLONE_NEWNS if hide_with == "mount" else 0) | (CLONE_NEWNET if network_with == "namespace" else 0)


class Launcher:
    """Starts one command in a sandbox. Made before the call's policy is built, or earlier still
    in a spare worker (`prepare`): its thread makes the namespaces at once, makes every mount
    read-only and hides this process's and its ancestors' /proc entries, none of which depends on
    the call; `arm` gives it the call's rules, and `spawn(start)` runs `start` (which makes the
    Popen) in that thread once it has entered the rest of the sandbox."""

    def __init__(self, user_namespace: bool, flags: int, plan: SandboxPlan | None = None):
        """`plan` (a spare's guess: the last call's plan) is applied ahead too, all but the call's
        temporary folder; `arm` then checks the call's plan is that one."""
        self.key = (user_namespace, flags)
        self.plan = plan if flags & CLONE_NEWNS else None
        self._hidden: list[str] = []
        self._writable: list[str] = []
        self._empty: bytes | None = None     # the empty tmpfs, bound over every hidden folder
        self._filter = b""
        self._ruleset = -1
        self._pinned: list[tuple[str, int]] = []
        self._held: list[int] = []
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._results: queue.SimpleQueue = queue.SimpleQueue()
        # The worker's own /proc entries (its environment, memory maps) become root's alone, so
        # the command cannot read them; its children are dumpable again after exec.
        _prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
        if user_namespace:
            try:
                enter_user_namespace()      # before the thread: the kernel refuses it to a threaded process
            except OSError as err:
                raise SandboxError(f"the worker could not enter a user namespace ({err.strerror})") from None
        # The /proc entries of SCV and of whatever started it: their environments hold what a
        # delegated agent's own was cleaned of.
        own = [f"/proc/{pid}" for pid in [os.getpid(), *ancestors()]] if flags & CLONE_NEWNS else []
        if self.plan is not None:
            try:
                self._arm(self.plan)
            except SandboxError:
                self.plan = None      # the call arms it itself, and says why it cannot
            else:
                own += self._hidden
                self._pinned = _pin([*self.plan.hidden, *self.plan.writable])
        self._handed = False      # the thread got its job (a start, or None: nothing to start)
        # The thread gets its own copy of the roots to make writable ahead: `arm`, on the call's
        # arrival, replaces the lists while the thread may still be doing this work.
        ahead = list(self._writable) if self.plan is not None else []
        _thread.start_new_thread(self._body, (flags, own, ahead))   # lighter than threading.Thread, in a fresh worker
        if flags:
            # A new thread runs only once it gets the GIL, which this one would keep for the whole
            # policy work; wait until it is inside unshare (which releases it), so the two overlap.
            self._results.get()

    def fits(self, plan: SandboxPlan) -> bool:
        """Whether what was applied ahead is this plan, on the same folders and files: one
        removed and made again since (same path, another inode: the rules and mounts would
        still name the old one) sends the call down the path that applies it afresh."""
        if self.plan is None:
            return True
        if self.plan != plan:
            return False
        for path, fd in self._pinned:
            try:
                held, now = os.fstat(fd), os.lstat(path)
            except OSError:
                return False
            if (held.st_dev, held.st_ino) != (now.st_dev, now.st_ino):
                return False
        return True

    def _arm(self, plan: SandboxPlan) -> None:
        self._hidden = list(plan.hidden)
        self._writable = sorted(set(plan.writable), key=len)      # a root before the roots inside it
        self._filter = FILTERS.get(plan.sockets, b"")
        if not self._filter:
            raise SandboxError(f"no seccomp filter {plan.sockets!r} for this machine ({FILTER_ERROR})")
        try:
            self._ruleset = build_ruleset([ll.Rule(path, rights) for path, rights in plan.rules], plan.landlock_abi,
                                          plan.network)
        except OSError as err:
            raise SandboxError(f"the Landlock rules could not be built ({err.strerror})") from None

    def arm(self, plan: SandboxPlan, tmpdir: str) -> None:
        """The call's plan and its temporary folder; what was applied ahead only gains the folder."""
        if self.plan is None:
            self._arm(plan)
            self._writable.append(tmpdir)
        else:
            self._hidden, self._writable = [], [tmpdir]
        try:
            add_rules(self._ruleset, [ll.Rule(tmpdir, ll.folder_rights(plan.landlock_abi))])
        except OSError as err:
            raise SandboxError(f"the Landlock rules could not be built ({err.strerror})") from None

    def close(self) -> None:
        if not self._handed:
            self._handed = True
            self._jobs.put(None)
            self._results.get()       # the thread has left
        if self._ruleset >= 0:
            os.close(self._ruleset)
            self._ruleset = -1
        for _, fd in self._pinned:
            os.close(fd)
        self._pinned = []

    def spawn(self, start: Callable[[], object]):
        self._handed = True
        self._jobs.put(start)
        outcome = self._results.get()
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    # --- in the spawning thread -----------------------------------------------------------

    def _body(self, flags: int, own: list[str], ahead: list[str]) -> None:
        early = None
        if flags:
            self._results.put(None)
            try:
                _check(_unshare(flags), "unshare")
                # Held until the worker exits: the last process leaving a mount namespace tears
                # it down on its way out (over a millisecond here), which would hold up the
                # command's exit; the worker exits after sending its result.
                for kind, flag in (("mnt", CLONE_NEWNS), ("net", CLONE_NEWNET)):
                    if flags & flag:
                        self._held.append(os.open(f"/proc/thread-self/ns/{kind}", os.O_RDONLY | os.O_CLOEXEC))
                if flags & CLONE_NEWNS:
                    # Mount events of the host still reach this namespace; none of ours leave it.
                    _check(_mount(None, b"/", None, MS_REC | MS_SLAVE, None), "mount(MS_SLAVE)")
                    # Landlock's write rights do not cover a file's mode, times, owner or extended
                    # attributes; a read-only mount refuses them all (EROFS). The writable roots
                    # are bound over themselves and made writable again once the call names them.
                    _set_read_only(b"/", True, recursive=True)
                    self._hide_all(own)
                    self._writable_again(ahead)
            except OSError as err:
                early = err
        start = self._jobs.get()
        if start is None:
            self._results.put(None)
            return
        try:
            if early is not None:
                raise early
            self._enter(flags)
        except OSError as err:
            self._results.put(SandboxError(f"the sandbox could not be entered ({err.strerror})"))
            return
        try:
            self._results.put(start())
        except BaseException as err:     # handed to the caller's thread as it is
            self._results.put(err)

    def _hide_all(self, hidden: list[str]) -> None:
        """One empty, read-only tmpfs over the first hidden folder, bound over every other one
        (cheaper than a tmpfs each); /dev/null, read-only, over anything else."""
        for path in hidden:
            target = os.fsencode(path)
            try:
                if os.path.isdir(path) and not os.path.islink(path):
                    if self._empty is None:
                        _check(_mount(b"tmpfs", target, b"tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
                                      EMPTY_TMPFS), f"mount tmpfs on {path}")
                        self._empty = target
                    else:
                        _check(_mount(self._empty, target, None, MS_BIND, None), f"bind over {path}")
                else:
                    _check(_mount(b"/dev/null", target, None, MS_BIND, None), f"bind /dev/null on {path}")
                    _check(_mount(None, target, None, MS_REMOUNT | MS_BIND | MS_RDONLY, None),
                           f"remount {path} read-only")
            except FileNotFoundError:
                pass     # gone since the plan was made: nothing left to hide

    def _writable_again(self, roots: list[str]) -> None:
        """Each writable root bound over itself (a copy of the read-only mount under it) and
        made writable again: that mount only, so a read-only mount inside it stays read-only."""
        for path in roots:
            target = os.fsencode(path)
            try:
                _check(_mount(target, target, None, MS_BIND | MS_REC, None), f"bind {path} over itself")
            except FileNotFoundError:
                continue     # gone since the plan was made: nothing to write there
            _set_read_only(target, False, recursive=False)

    def _enter(self, flags: int) -> None:
        if flags & CLONE_NEWNS:
            self._writable_again(self._writable)
            self._hide_all(self._hidden)
        for capability in range(LAST_CAPABILITY + 1):
            if capability not in KEPT_CAPABILITIES:
                # Without CAP_SETPCAP (an unprivileged user outside a user namespace) there is nothing to drop.
                if _prctl(PR_CAPBSET_DROP, capability, 0, 0, 0) != 0 and ctypes.get_errno() == errno.EPERM:
                    break
        _check(_prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(PR_SET_NO_NEW_PRIVS)")
        seccomp.install(self._filter)
        _check(_syscall(SYS_LANDLOCK_RESTRICT_SELF, self._ruleset, ctypes.c_uint32(0)), "landlock_restrict_self")


# --- made ready in a spare worker -------------------------------------------------------------

_prepared: Launcher | None = None


def prepare(preparation: str, plan: dict | None = None) -> None:
    """Run by a spare worker the fork point readied for sandboxed calls (`policy.preparation`):
    the namespaces, the read-only mounts and the hidden /proc entries, before the call arrives;
    with the last such call's plan, that plan's rules and mounts too (the next call most often
    has the same)."""
    global _prepared
    parts = preparation.split(",")
    flags = (CLONE_NEWNS if "mount" in parts else 0) | (CLONE_NEWNET if "network" in parts else 0)
    try:
        guess = msgspec.convert(plan, SandboxPlan) if plan else None
    except msgspec.ValidationError:
        guess = None
    try:
        _prepared = Launcher("userns" in parts, flags, guess)
    except SandboxError:
        _prepared = None      # the call makes its own and reports why it cannot


def launcher_for(plan: SandboxPlan) -> Launcher:
    """The launcher the spare made ready when it fits the plan, else a new one."""
    global _prepared
    key = (plan.user_namespace, namespace_flags(plan.hide_with, plan.network_with))
    ready, _prepared = _prepared, None
    if ready is not None:
        if ready.key == key and ready.fits(plan):
            return ready
        ready.close()
    return Launcher(*key)


def _filters() -> tuple[dict[str, bytes], str]:
    try:
        return {kind: seccomp.program(kind) for kind in seccomp.FILTERS}, ""
    except ValueError as err:
        return {}, str(err)


# Built once, in the fork point.
FILTERS, FILTER_ERROR = _filters()


if __name__ == "__main__" and sys.argv[1:] == ["--probe"]:
    sys.stdout.write(msgspec.json.encode(probe()).decode() + "\n")
