"""The confinement a sandbox worker applies to itself after its imports, before any strategy code.

The launcher (:mod:`.launch`) has already put the worker in its own user, pid,
mount, network and IPC namespaces with a read-only view of the file system.
Here, in this order (each step needs what the next one takes away):

1. **capabilities** -- every capability dropped (bounding, ambient, effective,
   permitted, inheritable); ``PR_SET_NO_NEW_PRIVS``;
2. **Landlock** (Linux >= 5.13; used up to ABI 6): no file may be opened for
   writing, created, removed, renamed, linked or truncated anywhere; reading
   and executing only below the top-level directories other than ``/proc`` (so
   no process's ``/proc`` entries, whatever the namespaces); with ABI >= 4 no
   TCP bind or connect; with ABI >= 6 no signal to a process outside the
   worker and no abstract unix socket outside it;
3. **resource limits**: ``RLIMIT_CPU`` (CPU seconds over the worker's life),
   ``RLIMIT_AS`` (address space), ``RLIMIT_FSIZE`` = 0, ``RLIMIT_NOFILE``,
   ``RLIMIT_NPROC`` = 0, ``RLIMIT_CORE`` = 0;
4. **seccomp, an allowlist** (libseccomp through ``pyseccomp``): only the
   system calls in :data:`ALLOW` (some only with the arguments given there);
   every other call fails with ``EPERM``; other architectures' calls (i386
   ``int 0x80``, x32) kill the worker.

What a layer could not do is reported to the run, which says it once on stderr.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import resource
import sys
import threading
from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class SandboxLimits:
    """Limits of one worker: times in CPU seconds of the worker, memory in MiB.

    Time limits count the worker's CPU time, so a loaded machine never trips
    them; a worker that sleeps or blocks is stopped by the wall-clock backstop,
    ``wall_factor`` times the CPU limit.
    """

    #: one ``act`` (or constructor) call may use this much CPU time
    call_cpu: float = 2.0
    #: a batch of B matches may use B times this much CPU time
    match_cpu: float = 20.0
    #: wall-clock backstop: this many times a CPU limit, for a worker that sleeps or blocks
    wall_factor: float = 10.0
    #: CPU time over a worker's life (RLIMIT_CPU); the run replaces a worker well before
    worker_cpu: int = 3600
    #: address space of a worker (RLIMIT_AS)
    memory_mb: int = 2048
    #: characters of a strategy's print()/stderr output kept per batch
    output_chars: int = 4000
    #: wall-clock seconds one call may take without the progress page changing (at most; the
    #: backstop ``wall_factor`` x ``call_cpu`` applies when it is shorter)
    call_wall: float = 10.0
    #: wall-clock seconds a strategy may spend not computing (sleeping, blocking) over the run,
    #: beyond ``idle_factor`` times its CPU time: a sleeper that keeps touching its progress
    #: slot is stopped by this
    strategy_idle: float = 60.0
    idle_factor: float = 4.0

    # the names before the limits counted CPU time (read-only aliases)
    @property
    def call_timeout(self) -> float:
        return self.call_cpu

    @property
    def match_timeout(self) -> float:
        return self.match_cpu

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


# -- seccomp: the allowlist ----------------------------------------------------------------------

_O_WRITE = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND | 0o20000000  # O_TMPFILE

#: what a worker may call after its start-up.  Measured (``python -m
#: scripts/measure_sandbox_syscalls.py``: every path that runs strategy code, on the
#: published-format, LLM-style and benign fixture sets, under strace; docs/sandbox.md has the
#: counts), plus the few marked "not measured" with their reason.  Values: None -- any
#: arguments; otherwise the argument patterns allowed, each a tuple of ``(arg, op, value)``
#: conditions that must all hold (``("masked_eq", value, mask)``: ``arg & mask == value``;
#: "self" stands for the worker's own pid).
ALLOW: dict[str, list[tuple[tuple[Any, ...], ...]] | None] = {
    # the pipes to the run, the progress page, the bounded stdout/stderr; reading files
    "read": None,
    "write": None,  # only descriptors it has: the pipes, /dev/null (nothing opens for writing)
    "close": None,
    "lseek": None,
    "pread64": None,  # not measured: the dynamic loader reads long ELF headers with it
    # imports and strategy sets are read in the worker -- never opened for writing
    "openat": [((2, "masked_eq", 0, _O_WRITE),)],
    "newfstatat": None,
    "fstat": None,  # not measured: what fstat() is on a C library older than glibc 2.33
    "getdents64": None,
    "ioctl": [((1, "eq", 0x5401),)],  # TCGETS: open() asks whether a file is a terminal
    # memory: the allocator, numpy's large arrays, loading extension modules, OpenBLAS
    "brk": None,
    "mmap": None,
    "munmap": None,
    "mprotect": None,
    "madvise": None,
    "mbind": None,
    "futex": None,
    # time, randomness, its own CPU time
    "clock_gettime": None,  # not measured (vDSO here): the fallback where there is no vDSO
    "clock_nanosleep": None,
    "getrandom": None,
    "getrusage": None,
    "getpid": None,
    # signals: the interpreter's own handlers; to itself only, so that abort() and
    # os.kill(os.getpid(), ...) end the worker the way they say (not measured: hostile corpus)
    "rt_sigaction": None,
    "rt_sigprocmask": None,
    "rt_sigreturn": None,
    "kill": [((0, "eq", "self"),)],
    "tgkill": [((0, "eq", "self"),)],
    "gettid": None,  # raise() (and so abort()) asks for its thread id
    "exit_group": None,
}


def _seccomp(measure: bool) -> str:
    import pyseccomp as sc  # noqa: PLC0415 - Linux only; imported early by confine()

    ops = {"eq": sc.EQ, "ne": sc.NE, "masked_eq": sc.MASKED_EQ}
    # measuring: LOG allows (and logs) what the list does not (libseccomp refuses rules whose
    # action is the default one, so the default cannot be ALLOW)
    f = sc.SyscallFilter(sc.LOG if measure else sc.ERRNO(errno.EPERM))
    with contextlib.suppress(Exception):
        f.set_attr(sc.Attr.ACT_BADARCH, sc.KILL_PROCESS)  # i386 / x32 calls: end the worker
    with contextlib.suppress(Exception):
        f.set_attr(sc.Attr.CTL_TSYNC, 1)  # every thread (there should be only one)
    pid = os.getpid()
    for name, patterns in ALLOW.items():
        if patterns is None:
            f.add_rule(sc.ALLOW, name)
            continue
        for pattern in patterns:
            args = []
            for arg, op, value, *mask in pattern:
                value = pid if value == "self" else value
                if op == "masked_eq":  # (arg, masked_eq, expected, mask)
                    args.append(sc.Arg(arg, sc.MASKED_EQ, mask[0], value))
                else:
                    args.append(sc.Arg(arg, ops[op], value))
            f.add_rule(sc.ALLOW, name, *args)
    f.load()
    return "seccomp allowlist" + (" (measuring: nothing denied)" if measure else "")


# -- capabilities --------------------------------------------------------------------------------

PR_SET_NO_NEW_PRIVS, PR_CAPBSET_DROP, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 38, 24, 47, 4


def _libc() -> Any:
    return ctypes.CDLL(None, use_errno=True)


def _drop_capabilities() -> str:
    libc = _libc()
    libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    for cap in range(64):
        libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)  # fails past the last capability: fine

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    data = (ctypes.c_uint32 * 6)()
    if libc.capset(ctypes.byref(Header(0x20080522, 0)), data) != 0:
        raise OSError(ctypes.get_errno(), "capset")
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "PR_SET_NO_NEW_PRIVS")
    return "no capabilities"


# -- Landlock ------------------------------------------------------------------------------------

_NR_CREATE_RULESET, _NR_ADD_RULE, _NR_RESTRICT_SELF = 444, 445, 446  # every architecture
_FS_EXECUTE, _FS_WRITE_FILE, _FS_READ_FILE, _FS_READ_DIR = 1, 2, 4, 8
_FS_ABI1 = (1 << 13) - 1  # EXECUTE .. MAKE_SYM
_FS_REFER, _FS_TRUNCATE, _FS_IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
_NET_BIND_TCP, _NET_CONNECT_TCP = 1, 2
_SCOPE_ABSTRACT_UNIX, _SCOPE_SIGNAL = 1, 2


#: the only entries of /dev a worker may open (for reading): no terminal among them
DEVICES = ("null", "zero", "full", "random", "urandom", "shm")


def _landlock() -> str:
    libc = _libc()
    libc.syscall.restype = ctypes.c_long
    abi = libc.syscall(_NR_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    if abi < 1:
        raise OSError(ctypes.get_errno(), "Landlock is not available")
    fs = _FS_ABI1
    if abi >= 2:
        fs |= _FS_REFER
    if abi >= 3:
        fs |= _FS_TRUNCATE
    if abi >= 5:
        fs |= _FS_IOCTL_DEV
    net = _NET_BIND_TCP | _NET_CONNECT_TCP if abi >= 4 else 0
    scoped = _SCOPE_ABSTRACT_UNIX | _SCOPE_SIGNAL if abi >= 6 else 0

    class RulesetAttr(ctypes.Structure):
        _fields_ = [("fs", ctypes.c_uint64), ("net", ctypes.c_uint64), ("scoped", ctypes.c_uint64)]

    class PathBeneath(ctypes.Structure):
        _pack_ = 1
        _fields_ = [("allowed", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]

    attr = RulesetAttr(fs, net, scoped)
    size = 24 if abi >= 6 else 16 if abi >= 4 else 8
    ruleset = libc.syscall(_NR_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), 0)
    if ruleset < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset")
    try:
        read_dir = _FS_EXECUTE | _FS_READ_FILE | _FS_READ_DIR
        # no process's /proc entries, whatever the namespaces; of /dev only the devices that
        # cannot be a terminal (no /dev/tty, /dev/pts/*, /dev/console, /dev/tty0, /dev/ttyS0)
        paths = ["/" + name for name in sorted(os.listdir("/")) if name not in ("proc", "dev")]
        paths += [f"/dev/{name}" for name in DEVICES]
        for path in paths:
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue
            try:
                is_dir = os.path.isdir(path)
                rule = PathBeneath(read_dir if is_dir else _FS_EXECUTE | _FS_READ_FILE, fd)
                if libc.syscall(_NR_ADD_RULE, ruleset, 1, ctypes.byref(rule), 0) != 0:
                    raise OSError(ctypes.get_errno(), f"landlock_add_rule {path}")
            finally:
                os.close(fd)
        if libc.syscall(_NR_RESTRICT_SELF, ruleset, 0) != 0:
            raise OSError(ctypes.get_errno(), "landlock_restrict_self")
    finally:
        os.close(ruleset)
    what = ["files read-only", "no /proc", "no terminal devices"]
    what += ["no TCP"] if net else []
    what += ["signals and abstract sockets scoped"] if scoped else []
    return f"Landlock ABI {abi} ({', '.join(what)})"


def _landlock_gaps(applied: str) -> list[str]:
    abi = int(applied.split()[2])
    out = []
    if abi < 4:
        out.append("Landlock TCP rules (kernel ABI < 4)")
    if abi < 6:
        out.append("Landlock signal scoping (kernel ABI < 6)")
    return out


# -- all of it -----------------------------------------------------------------------------------


def confine(
    limits: SandboxLimits, keep_fds: int, measure: bool = False
) -> tuple[list[str], list[str]]:
    """Apply every layer this platform allows: (applied, missing), for the run to report."""
    applied: list[str] = []
    missing: list[str] = []
    linux = sys.platform.startswith("linux")
    if linux:  # pyseccomp finds libseccomp by running ldconfig: before the limits forbid that
        with contextlib.suppress(ImportError, OSError):
            import pyseccomp  # noqa: F401, PLC0415
    if threading.active_count() > 1:
        missing.append(f"single thread ({threading.active_count()} running)")
    if linux:
        try:
            applied.append(_drop_capabilities())
        except OSError as exc:
            missing.append(f"capability drop ({exc})")
        try:
            applied.append(_landlock())
            missing += _landlock_gaps(applied[-1])
        except OSError as exc:
            missing.append(f"Landlock ({os.strerror(exc.errno) if exc.errno else exc})")

    def limit(which: int, value: int, label: str) -> None:
        try:
            resource.setrlimit(which, (value, value))
            applied.append(label)
        except (ValueError, OSError):
            missing.append(label)

    limit(resource.RLIMIT_CORE, 0, "RLIMIT_CORE=0")
    limit(resource.RLIMIT_CPU, int(limits.worker_cpu), f"RLIMIT_CPU={limits.worker_cpu}s")
    limit(resource.RLIMIT_FSIZE, 0, "RLIMIT_FSIZE=0")
    limit(resource.RLIMIT_NOFILE, keep_fds + 64, f"RLIMIT_NOFILE={keep_fds + 64}")
    if hasattr(resource, "RLIMIT_NPROC"):
        limit(resource.RLIMIT_NPROC, 0, "RLIMIT_NPROC=0")
    if linux:
        limit(resource.RLIMIT_AS, limits.memory_mb << 20, f"RLIMIT_AS={limits.memory_mb}MiB")
        try:
            applied.append(_seccomp(measure))
        except (ImportError, OSError, RuntimeError) as exc:
            missing.append(f"seccomp ({type(exc).__name__}: {exc})")
    return applied, missing
