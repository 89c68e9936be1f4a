"""A sandbox worker's launcher: ``python -s -P -B .../sandbox/launch.py REQ RESP PROG RUN_PID DEATHSIG``.

Started by :class:`~mesa_dilemmas.sandbox.pool.Sandbox` as a
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
4. forks the namespace's init (pid 1), which forks the worker (pid 2: as pid 1
   its own signals to itself would be ignored) and reaps it (so no zombie holds
   the namespace open whatever happens to the launcher); the worker mounts a
   ``/proc`` of its own pid namespace and runs
   :func:`~mesa_dilemmas.sandbox.worker.main` (that imports
   the engine, then confines itself: capabilities, Landlock, rlimits, seccomp);
5. tells the run the worker's pid (its CPU clock is the time limits' measure)
   and what it could not apply, then waits: when the worker ends (the init
   reports how) it ends the same way (same exit code or signal); when the run
   ends it kills both.

Elsewhere (macOS) it runs the worker in its own process and says what is missing.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
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

    if os.path.isdir("/dev/pts"):  # no pseudo-terminal in the worker's view (Landlock too)
        flags = MS_NOSUID | MS_NODEV | MS_NOEXEC
        if _libc.mount(b"tmpfs", b"/dev/pts", b"tmpfs", flags, b"size=4k,mode=555") == 0:
            applied.append("no /dev/pts")
        else:
            missing.append(f"empty /dev/pts ({os.strerror(ctypes.get_errno())})")

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


def _run_worker(
    worker_args: list[str], applied: list[str], missing: list[str], go: int, pid_ns: bool
) -> None:
    """The worker process: wait for the launcher's word, mount its /proc, serve."""
    os.read(go, 1)  # the launcher has told the run our pid
    os.close(go)
    if pid_ns:
        try:
            applied.append(mount_proc())
        except OSError as exc:
            missing.append(f"own /proc ({exc})")
    if f"private empty {PRIVATE_TMP}" in applied:
        os.environ["TMPDIR"] = PRIVATE_TMP
    from mesa_dilemmas.sandbox.worker import main as worker_main

    sys.exit(worker_main(worker_args, applied, missing))


def _init(report: int, start_worker) -> None:  # noqa: ANN001
    """pid 1 of the namespace: start the worker (pid 2), reap it, report how it ended, end.

    Being the worker's parent inside the namespace, it reaps the worker whatever happens
    to the launcher, so no zombie keeps the namespace (and this process) from ending."""
    _set_deathsig()
    worker = os.fork()
    if worker == 0:
        _set_deathsig()
        if os.getppid() != 1:  # the init is gone already
            os._exit(1)
        os.close(report)
        start_worker()
    os.closerange(3, report)  # the init holds nothing but its report
    os.closerange(report + 1, 1 << 16)
    os.write(report, b"F")  # the worker exists: the launcher may look for its pid
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except InterruptedError:
            continue
        except ChildProcessError:
            os._exit(1)
        if pid == worker:
            os.write(report, struct.pack("<i", status))
            os._exit(0)


def _find_child(parent: int) -> int:
    """The pid (in this pid namespace) of ``parent``'s only child, from /proc."""
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as f:
                    fields = f.read().rsplit(b")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == parent:
                return int(entry)
    raise OSError(errno.ESRCH, "the worker process was not found")


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


def _wait(child: int, worker: int, run_fd: int | None, run_pid: int, report: int | None) -> None:
    """Wait for ``child`` (the init, or the worker itself); end when it ends or the run does."""
    try:
        worker_fd = os.pidfd_open(worker)
    except (AttributeError, OSError):
        worker_fd = None
    try:
        child_fd = os.pidfd_open(child)
    except (AttributeError, OSError):
        child_fd = None

    def run_gone() -> None:  # so are its workers
        with contextlib.suppress(OSError):
            if worker_fd is not None:
                signal.pidfd_send_signal(worker_fd, signal.SIGKILL)
            else:
                os.kill(worker, signal.SIGKILL)
        with contextlib.suppress(OSError):
            os.kill(child, signal.SIGKILL)
            os.waitpid(child, 0)
        os._exit(1)

    # the run's orderly stop of a worker it has no pidfd of (a spare): the same clean-up
    signal.signal(signal.SIGTERM, lambda *_: run_gone())
    while True:
        if child_fd is not None and run_fd is not None:
            poller = select.poll()  # not select(): descriptors past 1,024 are refused there
            poller.register(child_fd, select.POLLIN)
            poller.register(run_fd, select.POLLIN)
            if any(fd == run_fd for fd, _ in poller.poll()):
                run_gone()
        else:
            time.sleep(0.2)
            if os.getppid() != run_pid:
                run_gone()
        try:
            pid, status = os.waitpid(child, 0 if child_fd is not None else os.WNOHANG)
        except InterruptedError:
            continue
        if pid == child:
            break
    if report is not None:  # the init: how the worker ended
        data = os.read(report, 4)
        status = struct.unpack("<i", data)[0] if len(data) == 4 else status
    _mirror(status)


def main(argv: list[str]) -> None:
    req_fd, resp_fd, prog_fd, run_pid, deathsig = (int(a) for a in argv[:5])
    os.environ.pop("PYTHONPATH", None)  # already in sys.path; nothing else is inherited
    worker_args = [str(req_fd), str(resp_fd), str(prog_fd)]
    applied: list[str] = []
    missing: list[str] = []
    if _libc is None:  # macOS and the rest: the worker runs here, with rlimits only
        missing += ["namespaces", "Landlock", "seccomp", "death with the run"]
        _send(resp_fd, {"launcher": {"pid": os.getpid(), "applied": [], "missing": missing}})
        from mesa_dilemmas.sandbox.worker import main as worker_main

        sys.exit(worker_main(worker_args, applied, missing))
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
    go_r, go_w = os.pipe()

    launcher = os.getpid()

    def start_worker() -> None:
        os.close(go_w)
        _run_worker(worker_args, applied, missing, go_r, pid_ns)

    report = None
    if pid_ns:  # launcher -> init (pid 1) -> worker (pid 2)
        report, report_w = os.pipe()
        child = os.fork()
        if child == 0:
            os.close(report)
            _init(report_w, start_worker)
        os.close(report_w)
        if os.read(report, 1) != b"F":
            os._exit(1)
        worker = _find_child(child)
    else:  # launcher -> worker
        child = worker = os.fork()
        if worker == 0:
            _set_deathsig()
            if os.getppid() != launcher:  # the launcher is gone already
                os._exit(1)
            start_worker()
    os.close(go_r)
    # opened only now: neither the worker nor the init holds a descriptor of the run
    try:
        run_fd = os.pidfd_open(run_pid)
    except (AttributeError, OSError):
        run_fd = None
        missing.append("pidfd of the run (polling its pid instead)")
    if os.getppid() != run_pid:
        os.kill(child, signal.SIGKILL)
        os._exit(1)
    _send(resp_fd, {"launcher": {"pid": worker, "applied": applied, "missing": missing}})
    os.write(go_w, b"g")
    for fd in (go_w, req_fd, resp_fd, prog_fd):
        os.close(fd)
    _wait(child, worker, run_fd, run_pid, report)


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except OSError as exc:
        print(f"sandbox launcher: {exc}", file=sys.stderr)
        os._exit(1)
