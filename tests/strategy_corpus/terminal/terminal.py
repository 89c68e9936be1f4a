"""Tries to reach a terminal: the controlling one, the pseudo-terminals, the consoles, stdin.

The test replaces @PTS@ with a pseudo-terminal it opened (and typed into).  Whatever the
strategy manages to open or read makes it raise with what it got (so the run would show it):
contained, it plays C and is never flagged.
"""

import contextlib
import os
import stat

from mesa_dilemmas.dilemmas.binary.strategies import Strategy

NAME = "terminal"
PTS = "@PTS@"


def _attempts():
    got = []
    paths = ["/dev/tty", "/dev/console", "/dev/tty0", "/dev/ttyS0", "/dev/ptmx", PTS]
    with contextlib.suppress(OSError):
        paths += ["/dev/pts/" + p for p in os.listdir("/dev/pts")]
    for path in paths:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
        except OSError:
            continue
        try:
            got.append(f"{path}: {os.read(fd, 200)!r}")
        except OSError as exc:
            got.append(f"{path}: opened ({exc.strerror})")
        finally:
            os.close(fd)
    for fd in (0, 1, 2):
        with contextlib.suppress(OSError):
            got.append(f"fd {fd} is the terminal {os.ttyname(fd)}")
    try:
        data = os.read(0, 200)
        if data:
            got.append(f"stdin: {data!r}")
    except OSError:
        pass
    for fd in (0, 1, 2):
        try:
            if os.isatty(fd):
                got.append(f"fd {fd} is a terminal")
        except OSError:
            pass
    return got


class TerminalReader(Strategy):
    def act(self, history):
        got = _attempts()
        if got:
            raise RuntimeError("reached a terminal: " + "; ".join(got))
        return "C"


class DescriptorCounter(Strategy):
    """Raises if it holds a descriptor other than stdin/stdout/stderr and the protocol's."""

    def act(self, history):
        extra = []
        for fd in range(3, 1024):
            try:
                mode = os.fstat(fd).st_mode
            except OSError:
                continue
            if not stat.S_ISFIFO(mode):
                extra.append(f"{fd} (mode {mode:o})")
        if extra:
            raise RuntimeError("descriptors beyond the protocol: " + ", ".join(extra))
        return "C"
