"""A process that already holds more than 1,024 file descriptors -- a long-lived notebook, the
dashboard, a test worker that ran the embedded model and a documentation build first -- still
plays sandboxed strategies: the parent waits on its workers with ``poll``, which has no such
limit (``select`` refused with "filedescriptor out of range in select()")."""

from __future__ import annotations

import os
import resource
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from mesa_dilemmas.dilemmas.binary.game import play_batch
from mesa_dilemmas.dilemmas.binary.rules import make_game
from mesa_dilemmas.dilemmas.binary.strategies import load_strategy_set
from mesa_dilemmas.sandbox import close_all

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux sandbox")

CORPUS = Path(__file__).parent / "strategy_corpus"
HELD = 1100


@pytest.fixture
def many_descriptors():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < HELD + 200:
        pytest.skip(f"this machine allows {hard} descriptors per process")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, HELD + 200), hard))
    held = [os.open(os.devnull, os.O_RDONLY) for _ in range(HELD)]
    try:
        yield held
    finally:
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_sandboxed_play_with_more_than_1024_descriptors_open(tmp_path, many_descriptors):
    assert max(many_descriptors) > 1024
    shutil.copy(CORPUS / "protocol" / "innocent.py", tmp_path / "innocent.py")
    innocent = list(load_strategy_set(tmp_path / "innocent.py"))
    game = make_game("public_goods", 4, 6)
    close_all()  # workers started now, their pipes numbered above 1,024
    result = play_batch(game, [[*innocent, *innocent][:4]], np.arange(1), keep_history=True)
    close_all()
    assert np.asarray(result.store.actions).shape[-1] == 6 and not result.flags
