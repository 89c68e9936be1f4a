"""The sandbox: strategy code from files is contained, flagged, reproducible."""

from __future__ import annotations

import os
import socket
import stat
from pathlib import Path

import numpy as np
import pytest

from mesa_dilemmas.dilemmas.binary.game import play_batch
from mesa_dilemmas.dilemmas.binary.rules import make_game
from mesa_dilemmas.dilemmas.binary.strategies import StrategyEntry, load_strategy_set
from mesa_dilemmas.sandbox import (
    SandboxLimits,
    all_sandboxes,
    close_all,
    get_limits,
    set_limits,
)

pytestmark = pytest.mark.skipif(not os.sys.platform.startswith("linux"), reason="Linux sandbox")

CORPUS = Path(__file__).parent / "strategy_corpus"

#: what each hostile strategy's flag must say
EXPECTED = {
    "WriteFile": "PermissionError",
    "OsOpenCreate": "PermissionError",
    "AppendExisting": "PermissionError",
    "PathlibWrite": "PermissionError",
    "RemoveFile": "PermissionError",
    "RenameFile": "PermissionError",
    "ChmodFile": "PermissionError",
    "MakeDir": "PermissionError",
    "Shell": "PermissionError",
    "OsSystem": "os.system failed",
    "OsPopen": "PermissionError",
    "Exec": "PermissionError",
    "Fork": "PermissionError",
    "ForkBomb": "PermissionError",
    "MultiprocessingChild": "raised",
    "BackgroundThread": "can't start new thread",
    "RawThread": "can't start new thread",
    "TcpConnect": "PermissionError",
    "UdpSend": "PermissionError",
    "HttpFetch": "raised URLError",
    "DunderImport": "PermissionError",
    "Importlib": "PermissionError",
    "BuiltinsOpen": "PermissionError",
    "Subclasses": "PermissionError",
    "FrameWalk": "patched mesa_dilemmas.dilemmas.binary.sandboxed.DEFAULT_ACTION",
    "ExitHard": "exit code 3",
    "SysExit": "raised SystemExit",
    "KeyboardInterrupter": "raised KeyboardInterrupt",
    "KillParent": "PermissionError",
    "KillGroup": "PermissionError",
    "KillSelf": "SIGKILL",
    "Abort": "SIGABRT",
    "Segfault": "SIGSEGV",
    "IgnoreSignalsAndSpin": "time limit",
    "InfiniteLoop": "time limit",
    "SleepForever": "time limit",
    "CatchEverythingLoop": "time limit",
    "Recursion": "RecursionError",
    "HugeAllocation": "MemoryError",
    "GrowForever": ("MemoryError", "time limit"),
    "NumpyHuge": "MemoryError",
    "PatchNumpy": "patched numpy.sum",
    "PatchEngine": "patched HistoryStore.record",
    "PatchBuiltins": "patched builtins.len",
    "PatchRandom": "patched random.random",
    "RaiseLimits": "raised",
    "HugeOutput": "characters to stdout/stderr",
    "BadAnswer": "answered 'cooperate'",
    "NoAnswer": "answered None",
    "BrokenConstructor": "constructor raised RuntimeError",
    "HangingConstructor": "time limit",
}


@pytest.fixture
def fast_limits():
    old = get_limits()
    set_limits(SandboxLimits(call_cpu=0.5, match_cpu=20.0, wall_factor=6.0, memory_mb=1024))
    yield
    set_limits(old)


def _sessions() -> dict[int, int]:
    """pid -> session id of every process on the machine."""
    out = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                fields = (d / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            out[int(d.name)] = int(fields[3])
    return out


def test_hostile_corpus_is_contained_and_reported(tmp_path: Path, fast_limits) -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.setblocking(False)
    port = listener.getsockname()[1]
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", port))
    udp.setblocking(False)
    marker_dir = tmp_path / "markers"
    marker_dir.mkdir()
    victim = marker_dir / "victim.txt"
    victim.write_text("original")
    victim.chmod(0o644)
    code = (CORPUS / "hostile.py").read_text()
    code = code.replace("@MARKER_DIR@", str(marker_dir)).replace("@PORT@", str(port))
    (tmp_path / "hostile.py").write_text(code)

    hostile = load_strategy_set(tmp_path / "hostile.py")
    assert len(hostile) == len(EXPECTED) >= 40
    assert all(not e.trusted for e in hostile)
    friends = [StrategyEntry.reference("all_c"), StrategyEntry.reference("tft(0.5)")]
    lineups = [[e, *friends] for e in hostile]
    game = make_game("public_goods", 3, 4)
    result = play_batch(game, lineups, np.arange(len(lineups)))

    by_name = {}
    for f in result.flags:
        by_name.setdefault(f.strategy, f)
    missing = {name: why for name, why in EXPECTED.items() if name not in by_name}
    assert not missing, f"not flagged: {missing}"
    wrong = {
        name: by_name[name].reason
        for name, why in EXPECTED.items()
        if not any(w in by_name[name].reason for w in ((why,) if isinstance(why, str) else why))
    }
    assert not wrong, f"unexpected reasons: {wrong}"
    # the matches went on: the reference players played every round and were paid
    assert result.totals.shape == (len(lineups), 3) and (result.totals[:, 1:] > 0).all()
    # nothing escaped
    assert sorted(p.name for p in marker_dir.iterdir()) == ["victim.txt"]
    assert victim.read_text() == "original" and stat.S_IMODE(victim.stat().st_mode) == 0o644
    with pytest.raises(BlockingIOError):
        listener.accept()
    with pytest.raises(BlockingIOError):
        udp.recvfrom(16)
    pids = {pid for box in all_sandboxes() for pid in box.pids}
    assert pids  # the batch was played in workers of this process
    close_all()
    assert not [pid for pid, sid in _sessions().items() if sid in pids]
    listener.close()
    udp.close()


def test_escape_corpus_is_contained_in_a_batch(tmp_path: Path, fast_limits, monkeypatch) -> None:
    """Issue 26's corpus aimed at this very process (its pid handed to the strategies): the
    process survives, nothing is written, nothing of its environment or memory comes out."""
    key = "sk-test-Zq7Lw2Nx9Vb4Kd6Hs1Jt8Pm3Rc5Yf0GaUe"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    marker_dir = tmp_path / "markers"
    marker_dir.mkdir()
    victim = marker_dir / "victim.txt"
    victim.write_text("original")
    (marker_dir / "run_pid").write_text(str(os.getpid()))
    code = (CORPUS / "escape.py").read_text()
    code = code.replace("@MARKER_DIR@", str(marker_dir)).replace("@KEY@", key)
    (tmp_path / "escape.py").write_text(code)
    escape = load_strategy_set(tmp_path / "escape.py")
    assert len(escape) >= 25 and all(not e.trusted for e in escape)
    friends = [StrategyEntry.reference("all_c"), StrategyEntry.reference("tft(0.5)")]
    lineups = [[e, *friends] for e in escape]
    game = make_game("public_goods", 3, 4)
    result = play_batch(game, lineups, np.arange(len(lineups)))
    reasons = {}
    for f in result.flags:
        reasons.setdefault(f.strategy, f.reason)
    assert sorted(reasons) == sorted(e.name for e in escape if e.name != "Control")
    text = " ".join(reasons.values())
    assert "LEAK" not in text and key[:10] not in text and key.encode().hex()[:16] not in text
    assert sorted(p.name for p in marker_dir.iterdir()) == ["run_pid", "victim.txt"]
    assert victim.read_text() == "original"
    assert (result.totals[:, 1:] > 0).all()  # the matches went on
    pids = {pid for box in all_sandboxes() for pid in box.pids}
    assert pids  # the batch was played in workers of this process
    close_all()
    assert not [pid for pid, sid in _sessions().items() if sid in pids]
