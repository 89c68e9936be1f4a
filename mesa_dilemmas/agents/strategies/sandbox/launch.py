"""A sandbox worker's launcher: ``python -s -P -B .../sandbox/launch.py REQ RESP PROG RUN_PID DEATHSIG``.

Started by :class:`~mesa_dilemmas.agents.strategies.sandbox.pool.Sandbox` as a
fresh process (``exec``, never a fork of the run: nothing of the run's memory --
API keys included -- is in it) with a clean environment, and run *by path*, so
that it imports the standard library only.  On Linux it

1. ties itself to the run: ``PR_SET_PDEATHSIG`` (when the run started it from
   its main thread; the signal follows the *thread*) and a pidfd of the run that
   it waits on, so a killed run takes its workers with it;
2. enters new user, pid, mount, network and IPC namespaces
   (``unshare(CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWNET |
   CLONE_NEWIPC)``; as root without the user namespace if that is refused);
3. makes every mount private and read-only (``mount_setattr(AT_RECURSIVE,
   MOUNT_ATTR_RDONLY)``) and puts an empty private tmpfs on ``/dev/shm`` (the
   worker's ``TMPDIR``);
4. forks the namespace's init (pid 1: it only waits, so that the worker's own
   signals to itself keep their ordinary meaning) and then the worker (pid 2),
   which mounts a ``/proc`` of its own pid namespace and runs
   :func:`~mesa_dilemmas.agents.strategies.sandbox.worker.main` (that imports
   the engine, then confines itself: capabilities, Landlock, rlimits, seccomp);
5. tells the run the worker's pid (its CPU clock is the time limits' measure)
   and what it could not apply, then waits: when the worker ends it ends the
   init and ends the same way (same exit code or signal); when the run ends it
   kills both.

Elsewhere (macOS) it runs the worker in its own process and says what is missing.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import select
import signal
import struct
import sys
import time

PR_SET_PDEATHSIG = 1
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REC, MS_PRIVATE = 0x4000, 1 << 18
AT_FDCWD, AT_RECURSIVE = -100, 0x8000
MOUNT_ATTR_RDONLY = 0x1
NR_MOUNT_SETATTR = 442  # the same number on every architecture (since Linux 5.12)
CLONE_NEWNS, CLONE_NEWIPC, CLONE_NEWUSER = 0x00020000, 0x08000000, 0x10000000
CLONE_NEWPID, CLONE_NEWNET = 0x20000000, 0x40000000
#: the worker's private temporary directory (an empty read-only tmpfs in its mount namespace)
PRIVATE_TMP = "/dev/shm"

_LEN = struct.Struct("<Q")
_libc = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _send(fd: int, header: dict) -> None:
    """One message in the pipe format of :mod:`.protocol` (a header, no arrays)."""
    head = json.dumps({**header, "__arrays__": []}, separators=(",", ":")).encode()
    data = _LEN.pack(0) + _LEN.pack(len(head)) + head
    while data:
        data = data[os.write(fd, data) :]


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _unshare(flags: int) -> None:
    if hasattr(os, "unshare"):
        os.unshare(flags)
    else:  # Python < 3.12
        _check(_libc.unshare(flags), "unshare")


def enter_namespaces() -> tuple[list[str], list[str]]:
    """New namespaces for this process's children; (applied, missing)."""
    uid, gid = os.geteuid(), os.getegid()
    others = CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC
    try:
        _unshare(CLONE_NEWUSER | others)
    except OSError as exc:
        if uid != 0:
            return [], [f"namespaces (user namespaces refused: {exc.strerror})"]
        try:  # root may create the others without a user namespace
            _unshare(others)
        except OSError as exc2:
            return [], [f"namespaces (unshare refused: {exc2.strerror})"]
        return ["pid, mount, network, IPC namespaces"], ["user namespace (refused to root)"]
    _write("/proc/self/setgroups", "deny")
    _write("/proc/self/uid_map", f"{uid} {uid} 1")
    _write("/proc/self/gid_map", f"{gid} {gid} 1")
    return ["user, pid, mount, network, IPC namespaces"], []


def read_only_view() -> tuple[list[str], list[str]]:
    """In the new mount namespace: mounts private, an empty tmpfs for temp, everything read-only."""
    _check(_libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None), "mount --make-rprivate /")
    applied, missing = [], []
    if os.path.isdir(PRIVATE_TMP):
        flags = MS_NOSUID | MS_NODEV | MS_NOEXEC
        if _libc.mount(b"tmpfs", PRIVATE_TMP.encode(), b"tmpfs", flags, b"size=64k,mode=755") == 0:
            applied.append(f"private empty {PRIVATE_TMP}")
        else:
            missing.append(f"private temp dir ({os.strerror(ctypes.get_errno())})")

    class MountAttr(ctypes.Structure):
        _fields_ = [(name, ctypes.c_uint64) for name in ("set", "clr", "prop", "userns")]

    attr = MountAttr(MOUNT_ATTR_RDONLY, 0, 0, 0)
    got = _libc.syscall(NR_MOUNT_SETATTR, AT_FDCWD, b"/", AT_RECURSIVE, ctypes.byref(attr), 32)
    if got == 0:
        applied.append("read-only file system")
    else:
        missing.append(f"read-only file system (mount_setattr: {os.strerror(ctypes.get_errno())})")
    return applied, missing


def mount_proc() -> str:
    """In the worker (pid 2 of the new pid namespace): a /proc that shows this namespace only."""
    flags = MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC
    for options in (b"subset=pid", None):
        if _libc.mount(b"proc", b"/proc", b"proc", flags, options) == 0:
            return "own /proc"
    # a /proc of the new namespace was refused (a container that masks parts of /proc): none at all
    _check(_libc.mount(b"tmpfs", b"/proc", b"tmpfs", flags, b"size=4k"), "mount tmpfs on /proc")
    return "empty /proc"


def _set_deathsig() -> None:
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def _init() -> None:
    """pid 1 of the namespace: reap whatever is handed to it, until killed."""
    _set_deathsig()
    os.closerange(3, 1 << 16)
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            signal.pause()
        except InterruptedError:
            pass


def _mirror(status: int) -> None:
    """End this process the way the worker ended (the run reads the reason from that)."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        with contextlib.suppress(OSError, ValueError):
            signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
        time.sleep(1.0)
        os._exit(128 + sig)
    os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1)


def _wait(worker: int, init: int | None, run_fd: int | None, run_pid: int) -> None:
    def kill_all() -> None:
        for pid in (worker, init):
            if pid is not None:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)

    try:
        worker_fd = os.pidfd_open(worker)
    except (AttributeError, OSError):
        worker_fd = None
    while True:
        if worker_fd is not None and run_fd is not None:
            ready = select.select([worker_fd, run_fd], [], [])[0]
            if run_fd in ready:  # the run is gone: so are its workers
                kill_all()
                os._exit(1)
        else:
            time.sleep(0.2)
            if os.getppid() != run_pid:
                kill_all()
                os._exit(1)
        try:
            pid, status = os.waitpid(worker, 0 if worker_fd is not None else os.WNOHANG)
        except InterruptedError:
            continue
        if pid == worker:
            if init is not None:
                with contextlib.suppress(OSError):
                    os.kill(init, signal.SIGKILL)
                    os.waitpid(init, 0)
            _mirror(status)


def main(argv: list[str]) -> None:
    req_fd, resp_fd, prog_fd, run_pid, deathsig = (int(a) for a in argv[:5])
    os.environ.pop("PYTHONPATH", None)  # already in sys.path; nothing else is inherited
    worker_args = [str(req_fd), str(resp_fd), str(prog_fd)]
    applied: list[str] = []
    missing: list[str] = []
    if _libc is None:  # macOS and the rest: the worker runs here, with rlimits only
        missing += ["namespaces", "Landlock", "seccomp", "death with the run", "CPU clock"]
        _send(resp_fd, {"launcher": {"pid": os.getpid(), "applied": [], "missing": missing}})
        from mesa_dilemmas.agents.strategies.sandbox.worker import main as worker_main

        sys.exit(worker_main(worker_args, applied))
    if deathsig:
        _set_deathsig()
        applied.append("PR_SET_PDEATHSIG")
    if os.getppid() != run_pid:  # the run died before we could tie ourselves to it
        os._exit(1)
    import resource

    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    got, lacking = enter_namespaces()
    applied += got
    missing += lacking
    pid_ns = bool(got)
    if pid_ns:
        got, lacking = read_only_view()
        applied += got
        missing += lacking
    init = None
    if pid_ns:
        init = os.fork()
        if init == 0:
            _init()
    launcher = os.getpid()
    go_r, go_w = os.pipe()
    worker = os.fork()
    if worker == 0:  # the worker
        _set_deathsig()
        os.close(go_w)
        if os.getppid() != (0 if pid_ns else launcher):  # the launcher is gone already
            os._exit(1)
        os.read(go_r, 1)  # wait until the launcher has told the run our pid
        os.close(go_r)
        if pid_ns:
            try:
                applied.append(mount_proc())
            except OSError as exc:
                missing.append(f"own /proc ({exc})")
        if f"private empty {PRIVATE_TMP}" in applied:
            os.environ["TMPDIR"] = PRIVATE_TMP
        from mesa_dilemmas.agents.strategies.sandbox.worker import main as worker_main

        sys.exit(worker_main(worker_args, applied, missing))
    os.close(go_r)
    # opened only now: neither the worker nor the init holds a descriptor of the run
    try:
        run_fd = os.pidfd_open(run_pid)
    except (AttributeError, OSError):
        run_fd = None
        missing.append("pidfd of the run (polling its pid instead)")
    if os.getppid() != run_pid:
        os.kill(worker, signal.SIGKILL)
        os._exit(1)
    _send(resp_fd, {"launcher": {"pid": worker, "applied": applied, "missing": missing}})
    os.write(go_w, b"g")
    for fd in (go_w, req_fd, resp_fd, prog_fd):
        os.close(fd)
    _wait(worker, init, run_fd, run_pid)


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except OSError as exc:
        print(f"sandbox launcher: {exc}", file=sys.stderr)
        os._exit(1)
