"""Issue 26: strategies written to escape a syscall denylist are contained on every path.

The escape corpus (tests/strategy_corpus/escape.py) signals the run, writes files
by calls beyond open/openat, steals the run's descriptors, reads its environment
and memory, and prints the API key.  Through the CLI -- ``analyse strategies``,
a self-play, a reference mix (the Mesa model), a cultural evolution -- every one
must be contained: no marker file, the victim file unchanged, no forged output,
the key nowhere in the run directory or on stdout/stderr (whole, a prefix, its
base64, or the hex/reversed forms the corpus uses to get past redaction), no
worker process left, the run finished with the strategies flagged.  The
in-process paths (a batch, the check API) are in test_sandbox.py and
test_sandbox_runs.py.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from mesa_dilemmas import redaction
from mesa_dilemmas.dilemmas.binary.strategies import load_strategy_set
from mesa_dilemmas.sandbox import (
    SandboxLimits,
    get_limits,
    sandbox_for,
    set_limits,
)

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux sandbox")

CORPUS = Path(__file__).parent / "strategy_corpus"
EXE = str(Path(sys.executable).with_name("mesa-dilemmas"))
LAUNCHER = "sandbox/launch.py"
#: a fake key in the usual format (the run's environment holds it as OPENAI_API_KEY)
KEY = "sk-test-Zq7Lw2Nx9Vb4Kd6Hs1Jt8Pm3Rc5Yf0GaUe"
#: the corpus's escapers (Control, which behaves, is left out)
ESCAPES = [
    name
    for name in re.findall(r"^class (\w+)\(Strategy\)", (CORPUS / "escape.py").read_text(), re.M)
    if name != "Control"
]


def key_forms() -> dict[str, str]:
    """What must not appear: the key, a prefix, its base64 (alone and inside Basic auth), and
    the forms the corpus leaks in so that a failure of isolation is seen despite redaction."""
    return {
        "key": KEY,
        "prefix": KEY[:10],
        "base64": base64.b64encode(KEY.encode()).decode()[:12],
        "basic-auth base64": base64.b64encode(f"user:{KEY}".encode()).decode()[8:20],
        "hex": KEY.encode().hex()[:16],
        "reversed": KEY[::-1][:10],
    }


@pytest.fixture
def escape(tmp_path: Path) -> tuple[Path, Path]:
    """(the escape set's file, the marker directory with victim.txt)."""
    markers = tmp_path / "markers"
    markers.mkdir()
    (markers / "victim.txt").write_text("original")
    code = (CORPUS / "escape.py").read_text()
    code = code.replace("@MARKER_DIR@", str(markers)).replace("@KEY@", KEY)
    sets = tmp_path / "sets"
    sets.mkdir()
    (sets / "escape.py").write_text(code)
    return sets / "escape.py", markers


def _launchers(run_pid: int) -> list[int]:
    """Live (non-zombie) processes of the run's sandbox: launcher, init and worker."""
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            argv = (d / "cmdline").read_bytes().split(b"\0")
            state = (d / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        ours = len(argv) > 8 and argv[4].endswith(LAUNCHER.encode())
        if state != "Z" and ours and argv[8] == str(run_pid).encode():
            out.append(int(d.name))
    return out


def _wait_for(condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout} s: {what}")
        time.sleep(0.05)


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not redaction.SECRET_NAME.search(k)}
    return {**env, "OPENAI_API_KEY": KEY}


def run_cli(args: list[str], markers: Path, cwd: Path) -> tuple[subprocess.CompletedProcess, int]:
    proc = subprocess.Popen(
        [EXE, *args], cwd=cwd, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    (markers / "run_pid").write_text(str(proc.pid))  # the corpus aims at it
    try:
        out, err = proc.communicate(timeout=900)
    finally:
        if proc.poll() is None:
            proc.kill()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err), proc.pid


def _texts(out_dir: Path) -> dict[str, str]:
    """Every file of a run directory as text (parquet tables read as tables)."""
    texts = {}
    for path in out_dir.rglob("*"):
        if path.is_file():
            if path.suffix == ".parquet":
                texts[str(path)] = pd.read_parquet(path).to_csv()
            else:
                texts[str(path)] = path.read_bytes().decode(errors="replace")
    return texts


def assert_contained(result: subprocess.CompletedProcess, pid: int, markers: Path, out: Path):
    assert result.returncode == 0, result.stderr[-3000:]
    assert sorted(p.name for p in markers.iterdir()) == ["run_pid", "victim.txt"]
    assert (markers / "victim.txt").read_text() == "original"
    assert "FORGED" not in result.stdout + result.stderr
    places = {"stdout": result.stdout, "stderr": result.stderr, **_texts(out)}
    leaks = [
        (form, where)
        for form, text in key_forms().items()
        for where, content in places.items()
        if text in content
    ]
    assert not leaks, f"the key got out: {leaks}"
    _wait_for(lambda: not _launchers(pid), 15, "every worker of the run ended")


def test_analyse_strategies_contains_the_escape_corpus(escape, tmp_path: Path) -> None:
    path, markers = escape
    out = tmp_path / "an"
    result, pid = run_cli(
        [
            "analyse",
            "strategies",
            str(path),
            "--rollouts",
            "2",
            "--no-references",
            "--no-progress",
            "--out",
            str(out),
        ],
        markers,
        tmp_path,
    )
    assert_contained(result, pid, markers, out)
    offenders = json.loads((out / "summary.json").read_text())["offenders"]["escape"]
    assert sorted(offenders) == sorted(ESCAPES)


def test_self_play_contains_the_escape_corpus(escape, tmp_path: Path) -> None:
    path, markers = escape
    out = tmp_path / "sp"
    result, pid = run_cli(
        [
            "run",
            "public_goods/self_play",
            "--no-progress",
            "--out",
            str(out),
            "--set",
            "options.group_sizes=[4]",
            "--set",
            "options.samples=40",
            "--set",
            f"options.collective_set={json.dumps(str(path))}",
        ],
        markers,
        tmp_path,
    )
    assert_contained(result, pid, markers, out)
    flagged = json.loads((out / "summary.json").read_text())["flagged_strategies"]
    assert sorted(flagged) == sorted(ESCAPES)


def test_reference_mix_contains_the_escape_corpus(escape, tmp_path: Path) -> None:
    path, markers = escape
    out = tmp_path / "rm"
    specs = [f"{path}:{name}" for name in [*ESCAPES, "Control"]] + ["all_c"]
    result, pid = run_cli(
        [
            "run",
            "public_goods/reference_mix",
            "--no-progress",
            "--out",
            str(out),
            "--set",
            "replications=1",
            "--set",
            "max_steps=3",
            "--set",
            "params.rounds=3",
            "--set",
            f"grid.n_players=[{len(specs)}]",
            "--set",
            f"params.strategies={json.dumps(specs)}",
        ],
        markers,
        tmp_path,
    )
    assert_contained(result, pid, markers, out)
    runs = pd.read_parquet(out / "runs.parquet")
    # every escaper failed every round and so played the default D; Control and all_c cooperated
    # (the Mesa model's flag counts are not among the run's columns)
    assert runs["cooperation_rate"].iloc[0] == pytest.approx(2 / len(specs))


def test_cultural_evolution_contains_the_escape_corpus(escape, tmp_path: Path) -> None:
    path, markers = escape
    out = tmp_path / "ce"
    sets = json.dumps([str(path), "reference_exploitative"])
    result, pid = run_cli(
        [
            "run",
            "public_goods/cultural_evolution",
            "--no-progress",
            "--out",
            str(out),
            "--set",
            "options.population=16",
            "--set",
            "options.survivors=4",
            "--set",
            "options.group_sizes=[4]",
            "--set",
            "options.runs=1",
            "--set",
            "options.max_generations=2",
            "--set",
            f"options.sets={sets}",
        ],
        markers,
        tmp_path,
    )
    assert_contained(result, pid, markers, out)
    flagged = json.loads((out / "summary.json").read_text())["flagged_strategies"]
    assert flagged and set(flagged) <= set(ESCAPES)


BUSY = """
from mesa_dilemmas.dilemmas.binary.strategies import Strategy


class Busy(Strategy):
    def act(self, history):
        total = 0
        for i in range(300_000):
            total += i
        return "C"
"""


def test_killing_a_run_ends_its_workers(tmp_path: Path) -> None:
    """SIGKILL a run in the middle of sandboxed play: its workers end with it."""
    (tmp_path / "busy.py").write_text(BUSY)
    proc = subprocess.Popen(
        [
            EXE,
            "run",
            "public_goods/self_play",
            "--no-progress",
            "--out",
            str(tmp_path / "run"),
            "--set",
            "options.group_sizes=[4]",
            "--set",
            "options.samples=200",
            "--set",
            f"options.collective_set={json.dumps(str(tmp_path / 'busy.py'))}",
        ],
        env=_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        # launcher, init and worker exist, and the worker is past its start-up
        _wait_for(lambda: len(_launchers(proc.pid)) >= 3, 120, "the run started its worker")
        time.sleep(0.5)  # let it get into a batch (not needed for the check, only realism)
        workers = _launchers(proc.pid)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        _wait_for(lambda: not _launchers(proc.pid), 15, f"workers {workers} ended")
    finally:
        if proc.poll() is None:
            proc.kill()


LOADS_SLOWLY = """
import time

from mesa_dilemmas.dilemmas.binary.strategies import Strategy

time.sleep(1.5)  # a slow disk, a loaded machine: wall-clock time, not CPU time


class Fine(Strategy):
    def act(self, history):
        return "C"
"""

SPINS_WHEN_LOADED = """
from mesa_dilemmas.dilemmas.binary.strategies import Strategy

while True:
    pass


class Never(Strategy):
    def act(self, history):
        return "C"
"""


@pytest.fixture
def tight_limits():
    old = get_limits()
    set_limits(SandboxLimits(call_cpu=0.5, match_cpu=0.5, wall_factor=8.0, memory_mb=1024))
    yield
    set_limits(old)


def test_time_limits_count_cpu_time_not_wall_clock(tmp_path: Path, tight_limits) -> None:
    slow = tmp_path / "slow.py"
    slow.write_text(LOADS_SLOWLY)
    assert [e.name for e in load_strategy_set(slow)] == ["Fine"]  # 1.5 s > 0.5 s, but asleep
    spin = tmp_path / "spin.py"
    spin.write_text(SPINS_WHEN_LOADED)
    t0 = time.monotonic()
    with pytest.raises(ValueError, match="CPU-time limit"):
        load_strategy_set(spin)
    assert time.monotonic() - t0 < 4.0  # caught by its CPU time, long before the backstop


def test_workers_report_their_layers() -> None:
    box = sandbox_for("test: layers")
    header, _ = box.call("describe", {"path": str(CORPUS / "benign.py")})
    assert header["set"]["entries"]
    applied = " | ".join(box.applied)
    if os.geteuid() == 0:  # CI: everything is available
        assert not box.missing, box.missing
        for layer in (
            "pid, mount, network, IPC namespaces",
            "read-only file system",
            "own /proc",
            "no capabilities",
            "Landlock",
            "seccomp allowlist",
            "PR_SET_PDEATHSIG",
        ):
            assert layer in applied, layer


def _nobody_can_run_python() -> bool:
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        return False
    probe = [
        "setpriv",
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
        sys.executable,
        "-c",
        "import numpy, mesa_dilemmas",
    ]
    return subprocess.run(probe, capture_output=True, cwd="/").returncode == 0


@pytest.mark.skipif(
    not _nobody_can_run_python(),
    reason="needs root, setpriv, and an interpreter user nobody can read (pyenv's under /root is not)",
)
def test_works_as_non_root() -> None:
    """As an unprivileged user (nobody) the same layers apply, through a user namespace."""
    script = (
        "import json, sys\n"
        "from mesa_dilemmas.dilemmas.binary.strategies import load_strategy_set\n"
        "from mesa_dilemmas.sandbox import all_sandboxes\n"
        f"s = load_strategy_set({str(CORPUS / 'benign.py')!r})\n"
        "box = all_sandboxes()[-1]\n"
        "print(json.dumps({'n': len(s), 'applied': box.applied, 'missing': box.missing}))\n"
    )
    result = subprocess.run(
        [
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            sys.executable,
            "-c",
            script,
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd="/",
        env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["n"] == 5
    applied = " | ".join(report["applied"])
    if report["missing"]:  # user namespaces refused to unprivileged users on this machine
        assert "mesa-dilemmas sandbox: strategy workers run without" in result.stderr
        assert result.stderr.count("strategy workers run without") == 1
    else:
        assert "user, pid, mount, network, IPC namespaces" in applied
        assert "seccomp allowlist" in applied and "Landlock" in applied


def test_redaction_hides_prefixes_and_base64(monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    echoed = (
        f"Incorrect API key provided: {KEY[:14]}****. body={base64.b64encode(KEY.encode()).decode()}"
        f" auth=Basic {base64.b64encode(f'me:{KEY}'.encode()).decode()}"
        f" url={base64.urlsafe_b64encode(KEY.encode()).decode()[:20]} whole={KEY}"
    )
    hidden = redaction.redact(echoed)
    assert "[redacted]" in hidden
    for form, text in key_forms().items():
        if form not in ("hex", "reversed"):
            assert text not in hidden, form
    assert KEY[:14] not in hidden and "sk-test-Zq" not in hidden
    assert redaction.redact("nothing secret here, sk-test") == "nothing secret here, sk-test"
    frame = pd.DataFrame({"answer": [f"C {KEY}", "D"], "n": [1, 2]})
    assert KEY not in redaction.redact_frame(frame).to_csv()
    assert redaction.redact_value({"a": [KEY, {"b": KEY[:12]}]}) == {
        "a": ["[redacted]", {"b": "[redacted]"}]
    }


NO_NAMESPACES = (
    "import errno, sys\n"
    "import pyseccomp as sc\n"
    "f = sc.SyscallFilter(sc.ALLOW)\n"
    "f.add_rule(sc.ERRNO(errno.EPERM), 'unshare')\n"
    "f.load()  # like a machine whose user namespaces are disabled (and unshare refused)\n"
    "from mesa_dilemmas.cli import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)


def test_without_namespaces_the_gap_is_reported_once_and_the_rest_holds(
    escape, tmp_path: Path
) -> None:
    """Where the machine refuses namespaces, the run says so once on stderr, and Landlock plus
    the seccomp allowlist still contain the corpus (the run's pid is visible to it then)."""
    path, markers = escape
    out = tmp_path / "an"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            NO_NAMESPACES,
            "analyse",
            "strategies",
            str(path),
            "--rollouts",
            "2",
            "--no-references",
            "--no-progress",
            "--out",
            str(out),
        ],
        cwd=tmp_path,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    (markers / "run_pid").write_text(str(proc.pid))
    stdout, stderr = proc.communicate(timeout=900)
    result = subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
    lines = [line for line in stderr.splitlines() if "strategy workers run without" in line]
    assert len(lines) == 1 and "namespaces (" in lines[0], stderr[-2000:]
    assert_contained(result, proc.pid, markers, out)
    offenders = json.loads((out / "summary.json").read_text())["offenders"]["escape"]
    assert sorted(offenders) == sorted(ESCAPES)
