"""The OS-level confinement a sandbox worker applies to itself before it loads strategy code.

Linux (what CI runs):
  * resource limits: ``RLIMIT_CPU`` (CPU seconds over the worker's life),
    ``RLIMIT_AS`` (address space), ``RLIMIT_FSIZE`` = 0 (writing to any file
    past 0 bytes kills with SIGXFSZ), ``RLIMIT_NOFILE`` (a few descriptors
    beyond the open ones), ``RLIMIT_NPROC`` = 0 (not enforced for root, hence
    the next point), ``RLIMIT_CORE`` = 0;
  * a seccomp filter (libseccomp through ``pyseccomp``) that fails with EPERM:
    ``socket``/``socketpair``/``connect``/``bind``..., ``fork``/``vfork``/
    ``clone``/``clone3`` (so no processes *and* no threads), ``execve``,
    every ``open``/``openat``/``creat`` for writing or creating, the file
    system's mutating calls (unlink, rename, mkdir, chmod, truncate, ...),
    ``kill``/``tgkill`` aimed at another process, ``ptrace``,
    ``process_vm_*``, ``setrlimit``/``prlimit64`` (raising a limit),
    ``unshare``/``setns``/``mount``/``chroot``; ``PR_SET_NO_NEW_PRIVS`` is set;
  * if seccomp cannot be loaded, a new user + network namespace
    (``unshare(CLONE_NEWUSER | CLONE_NEWNET)``) still removes the network.

macOS: only the resource limits (``RLIMIT_AS`` is not enforced there); see
docs/sandbox.md for what that leaves open.
"""

from __future__ import annotations

import contextlib
import errno
import os
import resource
import sys
from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class SandboxLimits:
    """Limits of one worker; all times in seconds, memory in MiB."""

    #: a single ``act`` (or constructor) call may not run longer than this (wall clock)
    call_timeout: float = 2.0
    #: a batch of B matches may take at most B times this (wall clock)
    match_timeout: float = 20.0
    #: CPU time over a worker's life (RLIMIT_CPU); the run replaces a worker well before
    worker_cpu: int = 3600
    #: address space of a worker (RLIMIT_AS)
    memory_mb: int = 2048
    #: characters of a strategy's print()/stderr output kept per batch
    output_chars: int = 4000

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


_DENY = (
    # network
    "socket",
    "socketpair",
    "connect",
    "bind",
    "listen",
    "accept",
    "accept4",
    "sendto",
    "sendmsg",
    "sendmmsg",
    # processes and threads
    "fork",
    "vfork",
    "clone",
    "clone3",
    "execve",
    "execveat",
    # the file system, mutating
    "creat",
    "unlink",
    "unlinkat",
    "rename",
    "renameat",
    "renameat2",
    "mkdir",
    "mkdirat",
    "rmdir",
    "link",
    "linkat",
    "symlink",
    "symlinkat",
    "mknod",
    "mknodat",
    "chmod",
    "fchmod",
    "fchmodat",
    "chown",
    "fchown",
    "lchown",
    "fchownat",
    "truncate",
    "ftruncate",
    "utimensat",
    "fallocate",
    # other processes, privileges, limits, namespaces
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "setrlimit",
    "unshare",
    "setns",
    "mount",
    "umount2",
    "chroot",
    "pivot_root",
    "setuid",
    "setgid",
    "setsid",
    "setpgid",
    "personality",
    "memfd_create",
    "io_uring_setup",
    "bpf",
    "perf_event_open",
)


def _seccomp() -> str:
    import pyseccomp as sc  # noqa: PLC0415 - Linux-only optional dependency

    deny = sc.ERRNO(errno.EPERM)
    f = sc.SyscallFilter(sc.ALLOW)
    for name in _DENY:
        with contextlib.suppress(RuntimeError, ValueError, OSError):  # unknown on this arch
            f.add_rule(deny, name)
    for flag in (os.O_WRONLY, os.O_RDWR, os.O_CREAT, os.O_TRUNC, os.O_APPEND):
        f.add_rule(deny, "openat", sc.Arg(2, sc.MASKED_EQ, flag, flag))
        f.add_rule(deny, "open", sc.Arg(1, sc.MASKED_EQ, flag, flag))
    pid = os.getpid()
    f.add_rule(deny, "kill", sc.Arg(0, sc.NE, pid))
    f.add_rule(deny, "tgkill", sc.Arg(0, sc.NE, pid))
    f.add_rule(deny, "prlimit64", sc.Arg(2, sc.NE, 0))  # reading limits is fine, setting is not
    f.load()  # also sets PR_SET_NO_NEW_PRIVS
    return "seccomp"


def _netns() -> str:
    os.unshare(os.CLONE_NEWUSER | os.CLONE_NEWNET)  # type: ignore[attr-defined]
    return "network namespace"


def confine(limits: SandboxLimits, keep_fds: int) -> list[str]:
    """Apply every limit this platform allows; returns what was applied (for reports and docs)."""
    applied = []

    def limit(which: int, value: int, label: str) -> None:
        try:
            resource.setrlimit(which, (value, value))
            applied.append(label)
        except (ValueError, OSError):
            pass

    limit(resource.RLIMIT_CORE, 0, "RLIMIT_CORE=0")
    limit(resource.RLIMIT_CPU, int(limits.worker_cpu), f"RLIMIT_CPU={limits.worker_cpu}s")
    limit(resource.RLIMIT_FSIZE, 0, "RLIMIT_FSIZE=0")
    limit(resource.RLIMIT_NOFILE, keep_fds + 64, f"RLIMIT_NOFILE={keep_fds + 64}")
    if hasattr(resource, "RLIMIT_NPROC"):
        limit(resource.RLIMIT_NPROC, 0, "RLIMIT_NPROC=0")
    if sys.platform.startswith("linux"):
        limit(resource.RLIMIT_AS, limits.memory_mb << 20, f"RLIMIT_AS={limits.memory_mb}MiB")
        try:
            applied.append(_seccomp())
        except (ImportError, OSError, RuntimeError):
            try:
                applied.append(_netns())
            except (AttributeError, OSError):
                applied.append("no network isolation available")
    return applied
