"""Crashes lose nothing and mix nothing: atomic outputs, unreadable chunks re-run, resume refuses
a different configuration."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest
from cli_runner import cli_in_process

from mesa_dilemmas.files import atomic_path, to_parquet_atomic, write_text_atomic

CHUNKED = [
    "fishery/altruism",
    "--no-progress",
    "--set",
    "replications=4",
    "--set",
    "max_steps=15",
    "--set",
    "options.replications_per_chunk=1",
    "--set",
    "options.keep_chunks=true",
]


def test_atomic_write_leaves_the_old_file_when_writing_fails(tmp_path):
    target = tmp_path / "summary.json"
    write_text_atomic(target, "old\n")

    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        tmp.write_text("half of the new")  # a writer that dies part-way
        raise RuntimeError("killed")
    assert target.read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["summary.json"]  # no stray temp file

    frame = pd.DataFrame({"a": range(5)})
    to_parquet_atomic(frame, tmp_path / "runs.parquet")
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "runs.parquet"), frame)


def test_truncated_chunk_is_run_again_on_resume(tmp_path):
    out = tmp_path / "run"
    assert cli_in_process(["run", *CHUNKED, "--out", str(out)])[0] == 0
    first = pd.read_parquet(out / "runs.parquet")
    chunk = out / "partial" / "chunk_00001.parquet"
    data = chunk.read_bytes()
    chunk.write_bytes(data[: len(data) // 2])  # what a kill during a plain write leaves
    code, err = cli_in_process(["run", *CHUNKED, "--resume", str(out)])
    assert code == 0, err
    assert "chunk_00001.parquet is unreadable" in err
    pd.testing.assert_frame_equal(first, pd.read_parquet(out / "runs.parquet"))


def test_resume_refuses_a_different_configuration(tmp_path):
    out = tmp_path / "run"
    assert cli_in_process(["run", *CHUNKED, "--out", str(out)])[0] == 0
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    code, err = cli_in_process(
        ["run", *CHUNKED, "--resume", str(out), "--set", "seed=999", "--set", "growth_rate=0.4"]
    )
    assert code == 2 and err.count("\n") == 1, err
    assert "differs from the saved one in grid.growth_rate, params.growth_rate, seed;" in err
    assert {
        p.name: p.read_bytes() for p in out.iterdir() if p.is_file()
    } == before  # nothing touched
    # a change that cannot affect results is allowed
    code, err = cli_in_process(
        ["run", *CHUNKED, "--resume", str(out), "--processes", "1", "--set", 'description="again"']
    )
    assert code == 0, err


def test_sigkill_mid_run_then_resume_is_identical(tmp_path):
    """Kill a chunked run once its first chunk is saved; the resumed run equals an unbroken one."""
    args = [
        "fishery/altruism",
        "--no-progress",
        "--set",
        "replications=6",
        "--set",
        "max_steps=40",
        "--set",
        "options.replications_per_chunk=1",
    ]
    clean = tmp_path / "clean"
    assert cli_in_process(["run", *args, "--out", str(clean)])[0] == 0
    out = tmp_path / "killed"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "mesa_dilemmas", "run", *args, "--out", str(out)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 120
    try:
        while not (out / "partial" / "chunk_00000.parquet").exists():
            assert proc.poll() is None, "the run finished before it could be killed"
            assert time.monotonic() < deadline
            time.sleep(0.01)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert not (out / "runs.parquet").exists()
    code, err = cli_in_process(["run", *args, "--resume", str(out)])
    assert code == 0, err
    assert (out / "runs.parquet").read_bytes() == (clean / "runs.parquet").read_bytes()
    assert not list(out.rglob("*.tmp"))


def test_a_finished_sweep_deletes_its_chunks_and_resuming_it_runs_nothing(tmp_path):
    """By default the saved chunks go once the tables and manifest are written."""
    out = tmp_path / "run"
    args = CHUNKED[:-2]  # without options.keep_chunks
    assert cli_in_process(["run", *args, "--out", str(out)])[0] == 0
    assert not (out / "partial").exists()
    assert (out / "manifest.json").is_file()
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    code, err = cli_in_process(["run", *args, "--resume", str(out)])
    assert code == 0 and "finished earlier; nothing to resume" in err, err
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_resuming_a_finished_run_runs_nothing_again(tmp_path):
    """A finished self-play run keeps no chunks: resuming it says so and rewrites nothing."""
    out = tmp_path / "run"
    args = [
        "run",
        "public_goods/self_play",
        "--set",
        "options.samples=2",
        "--set",
        "options.group_sizes=[4]",
    ]
    assert cli_in_process([*args, "--out", str(out)])[0] == 0
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    code, err = cli_in_process([*args, "--resume", str(out)])
    assert code == 0 and "finished earlier; nothing to resume" in err, err
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == before


def test_resuming_a_finished_sweep_reads_its_chunks_and_runs_none_again(tmp_path):
    out = tmp_path / "run"
    assert cli_in_process(["run", *CHUNKED, "--out", str(out)])[0] == 0
    chunks = {p: p.stat().st_mtime_ns for p in (out / "partial").iterdir()}
    first = pd.read_parquet(out / "runs.parquet")
    code, err = cli_in_process(["run", *CHUNKED, "--resume", str(out)])
    assert code == 0, err
    assert {p: p.stat().st_mtime_ns for p in (out / "partial").iterdir()} == chunks
    pd.testing.assert_frame_equal(first, pd.read_parquet(out / "runs.parquet"))
