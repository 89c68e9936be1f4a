"""A hosted session: groups of people, rule and LLM seats, each group a model in its own thread.

The session builds every group's model at once (so every seat has its join code before anyone
arrives), each with its own :class:`~mesa_dilemmas.agents.human.Hub`.  A group plays when the
experimenter starts it (or, with ``autostart``, when all its people have agreed and read the
instructions); its rounds run in a worker thread, the pages only read the hub.  Pausing takes
effect between rounds.

Every decision of every seat -- people, rules, language models -- is timed by the group's
:class:`RecordingBroker`; :meth:`Session.export` writes the session as ``mesa-dilemmas run``
writes a run (``config.toml``, ``runs.parquet``, ``steps.parquet``, ``agents.parquet``,
``summary.json``, ``manifest.json``; one run per group) plus ``decisions.parquet`` (one row
per decision).  ``agents.parquet`` carries ``seat_kind`` (human, llm, strategy, rule) and
response times, so the analyses compare people with the other seats.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import sys
import threading
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mesa_dilemmas.agents.broker import DecisionBroker
from mesa_dilemmas.agents.decisions import Decision
from mesa_dilemmas.agents.human import Hub, HumanPolicy, HumanTimeout, SeatClosed, plain, use_hub
from mesa_dilemmas.viz.host.config import Hosted


def seat_kind(policy: Any) -> str:
    """What sits at a seat: ``human``, ``llm``, ``strategy`` or ``rule`` (any other policy)."""
    if isinstance(policy, HumanPolicy):
        return "human"
    name = str(getattr(policy, "name", ""))
    if name.startswith("llm:"):
        return "llm"
    if name.startswith("strategy"):
        return "strategy"
    return "rule"


class RecordingBroker(DecisionBroker):
    """The broker, timing every decision: ``log`` gets one row per answer (seat, kind, seconds).

    The same routing and validation as :class:`DecisionBroker` (sync policies in order, then
    the asynchronous ones -- people and language models -- gathered at once)."""

    def __init__(self, base: DecisionBroker) -> None:
        super().__init__(narrator=base.narrator)
        self.stats = base.stats
        self.log: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    def ask_all(self, decisions: Sequence[Decision]) -> list[Any]:
        policies = [self.policy_for(d) for d in decisions]
        raw: list[Any] = [None] * len(decisions)
        took = [0.0] * len(decisions)
        pending = []
        for i, (d, p) in enumerate(zip(decisions, policies, strict=True)):
            if p.is_async:
                pending.append(i)
            else:
                started = time.perf_counter()
                raw[i] = p.decide(d)
                took[i] = time.perf_counter() - started

        async def timed(i: int) -> Any:
            started = time.perf_counter()
            try:
                return await policies[i].adecide(decisions[i])
            finally:
                took[i] = time.perf_counter() - started

        async def gather() -> list[Any]:
            return await asyncio.gather(*(timed(i) for i in pending))

        if pending:
            for i, r in zip(pending, self._run(gather()), strict=True):
                raw[i] = r
        values = [self._accept(d, p, r) for d, p, r in zip(decisions, policies, raw, strict=True)]
        with self.lock:
            for d, p, v, t in zip(decisions, policies, values, took, strict=True):
                self.log.append(
                    {
                        "Step": int(d.step),
                        "AgentID": d.agent_id,
                        "seat_kind": "narrator" if d.agent is None else seat_kind(p),
                        "policy": p.name,
                        "kind": d.kind,
                        "response_time_s": round(t, 4),
                        "answer": json.dumps(plain(v), sort_keys=True, default=str),
                    }
                )
        return values


@dataclass
class GroupRun:
    """One group: its model, its hub, its thread and where it stands."""

    index: int
    seed: int
    model: Any
    hub: Hub
    max_steps: int
    autostart: bool = False
    #: waiting (for people), running, paused, finished, stopped, error
    state: str = "waiting"
    message: str = ""
    rounds: int = 0
    started_at: float | None = None
    ended_at: float | None = None
    thread: threading.Thread | None = None
    on_end: Any = None
    llm_run: Path | None = None
    #: set once the group has ended and its records are written
    ended: threading.Event = field(default_factory=threading.Event)
    _go: threading.Event = field(default_factory=threading.Event)

    @property
    def broker(self) -> RecordingBroker:
        return self.model.broker

    @property
    def ready(self) -> bool:
        """Every person has opened the link, agreed and read the instructions."""
        return all(s.consented and s.instructed for s in self.hub.seats)

    def seats(self) -> list[dict[str, Any]]:
        """Every seat as the console shows it (people and the others)."""
        by_agent = {s.agent_id: s for s in self.hub.seats}
        rows = []
        for agent in sorted(self.model.agents, key=lambda a: getattr(a, "slot", 0)):
            seat = by_agent.get(agent.unique_id)
            row: dict[str, Any] = {
                "seat": getattr(agent, "slot", None),
                "agent": agent.unique_id,
                "kind": seat_kind(agent.policy),
                "policy": agent.policy.name,
            }
            if seat is not None:
                pending = seat.pending
                remaining = pending.remaining() if pending is not None else None
                row.update(
                    code=seat.code,
                    participant=seat.participant or "",
                    state=seat.state,
                    consented=seat.consented,
                    deciding=pending.kind if pending is not None else "",
                    remaining=None if remaining is None else round(remaining, 1),
                    answered=sum(r["answered"] for r in seat.records),
                    timeouts=sum(r["timed_out"] for r in seat.records)
                    + int(bool(pending and pending.timed_out)),
                )
            rows.append(row)
        return rows

    # -- control ---------------------------------------------------------------
    def start(self) -> None:
        with self.hub.lock:
            if self.thread is not None:
                if self.state == "paused":
                    self.resume()
                return
            self.hub.started = True
            self.state = "running"
            self.started_at = time.time()
            self._go.set()
            self.thread = threading.Thread(
                target=self._play, name=f"host-group-{self.index}", daemon=True
            )
            self.thread.start()
            self.hub.changed()

    def maybe_autostart(self) -> None:
        if self.autostart and self.thread is None and self.ready:
            self.start()

    def pause(self) -> None:
        with self.hub.lock:
            if self.state == "running":
                self._go.clear()
                self.state = "paused"
                self.hub.changed()

    def resume(self) -> None:
        with self.hub.lock:
            if self.state == "paused":
                self.state = "running"
                self._go.set()
                self.hub.changed()

    def stop(self) -> None:
        with self.hub.lock:
            if self.state in ("finished", "stopped", "error"):
                return
            self.state, self.message = "stopped", "stopped by the experimenter"
            self._go.set()
            self.hub.close("stopped")
        if self.thread is None:
            self._ended()

    # -- the worker ------------------------------------------------------------
    def _play(self) -> None:
        model = self.model
        if self.llm_run is not None:  # this thread's calls land in the session's record
            from mesa_dilemmas.llm import session as llm_session

            llm_session.activate(self.llm_run)
        try:
            while model.running and self.rounds < self.max_steps:
                self._go.wait()
                if self.state == "stopped":
                    break
                model.step()
                self.rounds += 1
                self.hub.changed()
            with self.hub.lock:
                if self.state not in ("stopped", "error"):
                    self.state = "finished"
                    self.message = f"played {self.rounds} rounds"
        except HumanTimeout as exc:
            self.state, self.message = "stopped", f"time-out: {exc}"
        except SeatClosed:
            self.state = "stopped"
            self.message = self.message or "stopped"
        except Exception as exc:  # noqa: BLE001 - shown on the console, kept in the export
            self.state = "error"
            self.message = f"{type(exc).__name__}: {exc}"
            traceback.print_exc(file=sys.stderr)
        self._ended()

    def _ended(self) -> None:
        self.ended_at = time.time()
        self.hub.close(self.state if self.state != "running" else "finished")
        try:
            if self.on_end is not None:
                self.on_end(self)
        finally:
            self.ended.set()
            self.hub.changed()

    @property
    def shown_state(self) -> str:
        """The state the console shows: an ended group is "saving" until its records are
        written (then finished, stopped or error)."""
        if self.state in ("finished", "stopped", "error") and not self.ended.is_set():
            return "saving"
        return self.state


def llm_specs(hosted: Hosted) -> set[str]:
    """The LLM specs the session's seats and roles call."""
    from mesa_dilemmas.agents.population import population_table

    return population_table(hosted.population).llm_specs()


def derive_seeds(seed: int, n: int) -> list[int]:
    from mesa_dilemmas.scenarios.batch import derive_seeds as derive

    return derive(seed, n)


class Session:
    """Every group of one hosted scenario, and where its records go."""

    def __init__(
        self, hosted: Hosted, out_dir: Path, console_key: str, *, groups: int | None = None
    ) -> None:
        from mesa_dilemmas.dilemmas import game_model
        from mesa_dilemmas.dilemmas.base import build_model

        self.hosted = hosted
        self.host = hosted.host
        self.out_dir = Path(out_dir)
        self.console_key = console_key
        self.started = time.time()
        self.lock = threading.RLock()
        self.exports = 0
        model_cls = game_model(hosted.scenario.game)
        n = groups or self.host.groups
        #: the LLM run record of the session's language-model seats (None: there are none):
        #: every group's thread activates it (the layer finds its run per thread)
        self.llm_run: Path | None = None
        self.llm_summary: dict[str, Any] | None = None
        specs = llm_specs(hosted)
        if specs or hosted.scenario.llm:
            from mesa_dilemmas.llm import session as llm_session
            from mesa_dilemmas.llm.guard import RunGuard

            guard = RunGuard.configure(specs, hosted.scenario.llm)
            guard.preflight()
            self.llm_run = llm_session.start_run(guard.settings, self.out_dir / "llm")
        taken: set[str] = set()
        counter = None
        self.groups: list[GroupRun] = []
        for i, seed in enumerate(derive_seeds(hosted.scenario.seed, n)):
            hub = Hub(
                time_limit_s=self.host.time_limit_s,
                on_timeout=self.host.on_timeout,
                taken_codes=taken,
                participants=counter,
            )
            counter = hub._participants  # one numbering of people across the session
            with use_hub(hub):
                model = build_model(model_cls, hosted.params, rng=seed)
            model.broker = RecordingBroker(model.broker)
            group = GroupRun(
                index=i,
                seed=seed,
                model=model,
                hub=hub,
                max_steps=hosted.scenario.max_steps,
                autostart=self.host.autostart,
                on_end=self._group_ended,
                llm_run=self.llm_run,
            )
            self.groups.append(group)
        if self.llm_run is not None:  # built; the groups' threads activate the run themselves
            from mesa_dilemmas.llm import session as llm_session

            llm_session.activate(None)
        self.write_seats()

    def write_seats(self) -> Path:
        """``seats.json`` in the run directory: every person's seat and join link (the codes
        are the only way in; no one's name is in it)."""
        from mesa_dilemmas.files import write_text_atomic

        self.out_dir.mkdir(parents=True, exist_ok=True)
        rows = [
            {"group": g, "seat": s, "code": c, "link": f"/play?code={c}"}
            for g, s, c in self.codes()
        ]
        path = self.out_dir / "seats.json"
        write_text_atomic(path, json.dumps(rows, indent=2) + "\n")
        return path

    # -- lookup ------------------------------------------------------------------
    def find(self, code: str) -> tuple[GroupRun, Any] | None:
        """The group and seat of a join code (None: no such code)."""
        for group in self.groups:
            seat = group.hub.seat(code or "")
            if seat is not None:
                return group, seat
        return None

    def codes(self) -> list[tuple[int, int, str]]:
        """(group, seat, code) of every person's seat."""
        return [(g.index, s.seat, s.code) for g in self.groups for s in g.hub.seats]

    def version(self) -> tuple[int, ...]:
        return tuple(g.hub.version for g in self.groups)

    def _group_ended(self, group: GroupRun) -> None:
        try:
            self.finish_llm()
            self.export()
        except Exception:  # noqa: BLE001 - a failed export must not kill the worker silently
            traceback.print_exc(file=sys.stderr)

    def close(self) -> None:
        for g in self.groups:
            g.stop()
        self.finish_llm()

    def finish_llm(self) -> None:
        """Close the LLM run record once every group has ended (its accounting kept)."""
        if self.llm_run is None or self.llm_summary is not None:
            return
        if any(g.state in ("waiting", "running", "paused") for g in self.groups):
            return
        from mesa_dilemmas.llm import session as llm_session

        with contextlib.suppress(Exception):
            self.llm_summary = llm_session.finish_run(self.llm_run)

    # -- the records ---------------------------------------------------------------
    def tables(self) -> dict[str, Any]:
        """runs / steps / agents / decisions frames of every group so far."""
        return session_tables(self)

    def export(self) -> Path:
        """Write the run directory (again: each export replaces the files with fuller ones)."""
        with self.lock:
            write_session(self)
            self.exports += 1
            return self.out_dir


def session_tables(session: Session) -> dict[str, Any]:
    import pandas as pd

    runs, steps, agents, decisions = [], [], [], []
    scalar_params = {
        k: v
        for k, v in session.hosted.scenario.params.items()
        if isinstance(v, bool | int | float | str)
    }
    for g in session.groups:
        model = g.model
        keys = {"RunId": g.index, "iteration": g.index}
        with g.broker.lock:
            log = pd.DataFrame(list(g.broker.log))
        people = pd.DataFrame(g.hub.records())
        if len(log):
            log = log.assign(**keys)
        # per seat: who sits there
        info = pd.DataFrame(
            [
                {
                    "AgentID": a.unique_id,
                    "seat": getattr(a, "slot", None),
                    "seat_kind": seat_kind(a.policy),
                    "policy": a.policy.name,
                }
                for a in model.agents
            ]
        )
        # one row per decision: the broker's timing, the person's record where there is one
        if len(log):
            table = log
            if len(people):
                extra = people[
                    ["AgentID", "Step", "kind", "timed_out", "invalid_answers", "answered",
                     "participant", "waited_s"]
                ].copy()  # fmt: skip
                extra["nth"] = extra.groupby(["AgentID", "Step", "kind"]).cumcount()
                table = table.assign(nth=table.groupby(["AgentID", "Step", "kind"]).cumcount())
                table = table.merge(extra, on=["AgentID", "Step", "kind", "nth"], how="left")
                table = table.drop(columns="nth")
                human = table["seat_kind"] == "human"
                table.loc[human, "response_time_s"] = table.loc[human, "waited_s"]
                table = table.drop(columns="waited_s")
            decisions.append(table)
        # steps: the game's model reporters, one row per collection
        frame = model.datacollector.get_model_vars_dataframe().reset_index(drop=True)
        first = 0 if len(frame) == g.rounds + 1 else 1
        frame.insert(0, "Step", range(first, first + len(frame)))
        steps.append(frame.assign(**keys))
        # agents: per round and seat, what it decided and how long it took (+ the game's reporters)
        if len(log):
            per = log[log["AgentID"].notna()].copy()
            per["AgentID"] = per["AgentID"].astype(int)
            grouped = per.groupby(["Step", "AgentID"]).agg(
                decisions=("kind", "size"), response_time_s=("response_time_s", "sum")
            )
            grouped = grouped.reset_index().merge(info, on="AgentID", how="left")
            if len(people):
                flags = (
                    people.groupby(["Step", "AgentID"])
                    .agg(timeouts=("timed_out", "sum"), invalid_answers=("invalid_answers", "sum"))
                    .reset_index()
                )
                grouped = grouped.merge(flags, on=["Step", "AgentID"], how="left")
            for col in ("timeouts", "invalid_answers"):
                grouped[col] = grouped.get(col, pd.Series(0, index=grouped.index)).fillna(0)
                grouped[col] = grouped[col].astype(int)
            reporters = model.datacollector.agent_reporters
            if reporters:
                game_rows = model.datacollector.get_agent_vars_dataframe().reset_index()
                game_rows = game_rows.rename(columns={"Time": "Step"})
                if {"Step", "AgentID"} <= set(game_rows.columns):
                    grouped = grouped.merge(game_rows, on=["Step", "AgentID"], how="left")
            agents.append(grouped.assign(**keys))
        final = frame.iloc[-1].to_dict() if len(frame) else {}
        human_log = log[log["seat_kind"] == "human"] if len(log) else log
        runs.append(
            {
                **keys,
                "seed": g.seed,
                **scalar_params,
                "state": g.state,
                "message": g.message,
                "steps_run": g.rounds,
                "human_seats": len(g.hub.seats),
                "human_decisions": len(people),
                "timeouts": int(people["timed_out"].sum()) if len(people) else 0,
                "invalid_answers": int(people["invalid_answers"].sum()) if len(people) else 0,
                "human_median_response_s": (
                    float(people["response_time_s"].dropna().median())
                    if len(people) and people["response_time_s"].notna().any()
                    else float("nan")
                ),
                "decisions_logged": len(log),
                "human_decisions_logged": len(human_log),
                **{k: v for k, v in final.items() if k != "Step"},
            }
        )
    concat = lambda xs: pd.concat(xs, ignore_index=True) if xs else pd.DataFrame()  # noqa: E731
    return {
        "runs": pd.DataFrame(runs),
        "steps": concat(steps),
        "agents": concat(agents),
        "decisions": concat(decisions),
    }


def write_session(session: Session) -> None:
    from mesa_dilemmas.files import to_parquet_atomic
    from mesa_dilemmas.redaction import redact_frame
    from mesa_dilemmas.scenarios.experiment import Results
    from mesa_dilemmas.scenarios.outputs import (
        package_versions,
        write_config,
        write_manifest,
        write_results,
    )

    out = session.out_dir
    out.mkdir(parents=True, exist_ok=True)
    tables = session.tables()
    model_cls = type(session.groups[0].model)
    declared = list(getattr(model_cls, "RUN_METRICS", ()))
    runs = tables["runs"]
    metrics = [m for m in declared if m in runs.columns] or [
        c for c in ("timeouts", "human_median_response_s") if c in runs.columns
    ]
    human = tables["decisions"]
    summary: dict[str, Any] = {
        "host": {
            "groups": len(session.groups),
            "states": [g.state for g in session.groups],
            "human_seats": sum(len(g.hub.seats) for g in session.groups),
            "time_limit_s": session.host.time_limit_s,
            "on_timeout": session.host.on_timeout,
        }
    }
    if len(human):
        by_kind = human.groupby("seat_kind")["response_time_s"]
        summary["host"]["response_time_s"] = {
            kind: {
                "median": float(v.median()),
                "p95": float(v.quantile(0.95)),
                "n": int(v.count()),
            }
            for kind, v in by_kind
        }
        if "timed_out" in human:
            summary["host"]["timeouts"] = int(human["timed_out"].fillna(False).astype(bool).sum())
    if session.llm_summary is not None:
        summary["llm"] = session.llm_summary
    results = Results(
        runs=runs,
        steps=tables["steps"],
        agents=tables["agents"] if len(tables["agents"]) else None,
        metrics=metrics,
        seeds=[g.seed for g in session.groups],
        summary=summary,
    )
    resolved = {k: v for k, v in session.hosted.raw.items()}
    resolved["host"] = session.host.model_dump()
    write_config(out, resolved)
    write_results(out, results)
    if len(human):
        to_parquet_atomic(redact_frame(human), out / "decisions.parquet")
    write_manifest(
        out,
        {
            "scenario": session.hosted.scenario.name,
            "game": session.hosted.scenario.game,
            "experiment": "host",
            "command": sys.argv,
            "started_utc": datetime.fromtimestamp(session.started, UTC).isoformat(),
            "wall_time_s": round(time.time() - session.started, 3),
            "seed": session.hosted.scenario.seed,
            "seeds": [g.seed for g in session.groups],
            "versions": package_versions(),
        },
    )


def default_out_dir(name: str, root: Path = Path("runs")) -> Path:
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-")
    return root / f"{slug}-host-{datetime.now(UTC).strftime('%Y%m%d-%H%M%S')}"


def seat_comparison(run_dir: Path) -> Any:
    """People, language models and rules side by side, per decision kind, from a session's
    ``decisions.parquet``: decisions, median and 95th-percentile response time, time-outs,
    refused answers, and the most frequent answer with its share."""
    import pandas as pd

    decisions = pd.read_parquet(Path(run_dir) / "decisions.parquet")
    for col in ("timed_out", "invalid_answers"):
        if col not in decisions:
            decisions[col] = 0
    rows = []
    for (kind, seat_kind), frame in decisions.groupby(["kind", "seat_kind"], sort=True):
        counts = frame["answer"].value_counts()
        rows.append(
            {
                "kind": kind,
                "seat_kind": seat_kind,
                "decisions": len(frame),
                "median_s": float(frame["response_time_s"].median()),
                "p95_s": float(frame["response_time_s"].quantile(0.95)),
                "timeouts": int(frame["timed_out"].fillna(False).astype(bool).sum()),
                "invalid_answers": int(frame["invalid_answers"].fillna(0).sum()),
                "top_answer": str(counts.index[0])[:40] if len(counts) else "",
                "top_share": float(counts.iloc[0] / len(frame)) if len(counts) else float("nan"),
            }
        )
    return pd.DataFrame(rows)
