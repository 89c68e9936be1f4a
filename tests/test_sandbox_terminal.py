"""Issue 36, the terminal family: no worker can reach a terminal or a descriptor of the run's.

This test opens a pseudo-terminal and types a secret into it; the strategies in
``tests/strategy_corpus/terminal/terminal.py`` try /dev/tty, every /dev/pts entry (that one
included), /dev/console, /dev/tty0, /dev/ttyS0, /dev/ptmx, their stdin and whether any of
their descriptors is a terminal, and count descriptors beyond the protocol's pipes.  What
they reach makes them raise with what they got -- so a flag (or the secret in any output)
is the failure.  (Before issue 36 the worker read the secret from the pseudo-terminal.)
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest

from mesa_dilemmas.dilemmas.binary.game import play_batch
from mesa_dilemmas.dilemmas.binary.rules import make_game
from mesa_dilemmas.dilemmas.binary.strategies import load_strategy_set
from mesa_dilemmas.sandbox import SandboxLimits, get_limits, set_limits

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux sandbox")

CORPUS = Path(__file__).parent / "strategy_corpus"
SECRET = "typed-at-the-terminal-7Q2"


@pytest.fixture
def pty():
    main_fd, sub_fd = os.openpty()
    os.write(main_fd, f"{SECRET}\n".encode())
    yield os.ttyname(sub_fd)
    os.close(main_fd)
    os.close(sub_fd)


def test_no_terminal_and_no_descriptor_reaches_a_worker(tmp_path: Path, pty: str) -> None:
    old = get_limits()
    set_limits(SandboxLimits(call_cpu=1.0))
    try:
        code = (CORPUS / "terminal" / "terminal.py").read_text().replace("@PTS@", pty)
        (tmp_path / "terminal.py").write_text(code)
        (tmp_path / "innocent.py").write_text((CORPUS / "protocol" / "innocent.py").read_text())
        reader, counter = load_strategy_set(tmp_path / "terminal.py")
        a, b, _ = load_strategy_set(tmp_path / "innocent.py")
        game = make_game("public_goods", 3, 3)
        # alone in its worker (one unit) and in lockstep with another unit
        result = play_batch(
            game, [[reader, counter, reader], [a, reader, counter], [a, b, a]], np.arange(3)
        )
    finally:
        set_limits(old)
    assert not result.flags, [f.reason for f in result.flags]
    assert (result.coop_by_round[:2] == 3).all()  # they played C: every attempt failed
    assert SECRET not in " ".join(f.reason for f in result.flags)
