"""Say vs do in the fishery: a villager's proposed harvest cap against its own effort in the
next round (``mesa-dilemmas analyse stated RUN_DIR``).

Where the proposals come from, for each run of a finished run directory:

``llm``
    an LLM villager proposes a community policy in words every govern phase (the
    ``community`` field of its ``fishery.norms`` decision, in the run's LLM record); its effort
    is its ``fishery.effort`` decision of the next round.  The cap a text states is read by the
    game's own rule (:func:`.norms.stated_cap`: one per-villager harvest in fish); a proposal
    from which it reads none is ``unparsed`` (counted, never dropped).  A decision that fell
    back (no valid answer) is not the villager's statement, nor its deed.
``rule``
    a rule villager proposes its personal norm g (with ``group_decision``), which the run's
    tables do not keep: for a run without an LLM record the proposals and efforts are read by
    replaying the run from its ``config.toml`` and seed (free and deterministic), and the
    replay must give the recorded ``mean_effort`` and ``group_norm`` of every step or the
    analysis stops.  Rule villagers of a run with LLM villagers are not replayed (their rule
    answers depend on the LLM's): only the LLM villagers' statements are judged there.

Judging: a proposal of a cap of L fish by a villager in round t is ``kept`` when its effort in
round t + 1 is at most L / (alpha K) -- the effort that harvests L from a full lake, the model's
own ``effort_compliance`` rule (alpha the catchability, K the capacity) -- else ``broken``;
``unjudged`` when the villager played no round t + 1 (the run ended, or it starved).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pandas as pd

from mesa_dilemmas.dilemmas.fishery.norms import stated_cap
from mesa_dilemmas.dilemmas.say_do import llm_decisions, load_run, replay_model, run_params

NAME = "stated"

RULE = (
    "A proposed cap of L fish per villager in round t is kept when the proposer's own effort in "
    "round t + 1 is at most L / (alpha K), the effort that harvests L from a full lake (the "
    "model's effort_compliance rule), broken otherwise. The cap of a text proposal is read by "
    "the fishery's stated_cap; a proposal stating no single cap is unparsed (counted). Seat "
    "kind: LLM villager or rule villager."
)

_TOL = 1e-9


def _limits(params: dict[str, Any]) -> tuple[float, float]:
    from mesa_dilemmas.dilemmas.fishery.parameters import FisheryParameters

    fields = FisheryParameters.model_fields
    alpha = float(params.get("catchability", fields["catchability"].default))
    capacity = float(params.get("capacity", fields["capacity"].default))
    return alpha, capacity


def replay(run_dir: Path) -> list[dict[str, Any]]:
    """Every rule villager's proposal and next effort, by replaying each run (see module doc)."""
    from mesa_dilemmas.dilemmas.fishery.norms import cap_sentence

    scenario, runs, steps = load_run(run_dir)
    out = []
    for _, row in runs.iterrows():
        params = run_params(scenario, row)
        model = replay_model(scenario, row)
        alpha, capacity = _limits(params)
        if not model.p.group_decision:
            continue
        proposals: dict[int, tuple[int, float]] = {}  # villager -> (round, cap) awaiting a deed
        trace = []
        while model.running and model.steps < scenario["max_steps"]:
            model.step()
            trace.append((float(model.mean_effort), float(model.group_norm)))
            living = {v.unique_id: v for v in model.living()}
            for vid, (round_, cap) in list(proposals.items()):
                v = living.get(vid)
                effort = None if v is None else float(v.effort)
                text = cap_sentence(cap)
                out.append(_statement(row, round_, vid, "rule", text, cap, effort, alpha, capacity))
                del proposals[vid]
            for vid, v in living.items():
                proposals[vid] = (int(model.round), float(v.personal_norm))
        for vid, (round_, cap) in proposals.items():
            text = cap_sentence(cap)
            out.append(_statement(row, round_, vid, "rule", text, cap, None, alpha, capacity))
        recorded = steps[steps["RunId"] == row["RunId"]][["mean_effort", "group_norm"]]
        mine = pd.DataFrame(trace, columns=["mean_effort", "group_norm"])
        recorded = recorded.iloc[-len(mine) :].reset_index(drop=True)
        if len(recorded) != len(mine) or not all(
            math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9) or (math.isnan(a) and math.isnan(b))
            for a, b in zip(recorded.to_numpy().ravel(), mine.to_numpy().ravel(), strict=True)
        ):
            raise ValueError(
                f"{run_dir}: run {row['RunId']} replays differently from its record "
                "(mean effort, group norm); its proposals cannot be read"
            )
    return out


def _statement(
    row: Any,
    round_: int,
    seat: int,
    kind: str,
    text: str,
    cap: float | None,
    effort: float | None,
    alpha: float,
    capacity: float,
) -> dict[str, Any]:
    allowed = None if cap is None else cap / (alpha * capacity)
    if cap is None:
        status = "unparsed"
    elif effort is None:
        status = "unjudged"
    else:
        status = "kept" if effort <= allowed + _TOL else "broken"
    return {
        "run": int(row["RunId"]),
        "round": round_,
        "seat": seat,
        "seat_kind": kind,
        "source": "proposal",
        "text": " ".join(str(text).split())[:300],
        "amount": cap,
        "allowed_effort": allowed,
        "effort_next_round": effort,
        "status": status,
    }


def statements(run_dir: Path) -> pd.DataFrame:
    """One row per proposal of every run (columns: :data:`..say_do.STATEMENT_COLUMNS` and
    ``allowed_effort``, ``effort_next_round``)."""
    decisions = llm_decisions(run_dir)
    if decisions is None:
        rows = replay(run_dir)
    else:
        scenario, runs, _ = load_run(run_dir)
        by_seed = {str(int(r["seed"])): r for _, r in runs.iterrows()}
        rows = []
        ok = decisions[~decisions["fell_back"].astype(bool)]
        efforts = {
            (str(d.run_seed), int(d.agent_id), int(d.round)): float(json.loads(d.value))
            for d in ok[ok["kind"] == "fishery.effort"].itertuples(index=False)
        }
        for d in ok[ok["kind"] == "fishery.norms"].itertuples(index=False):
            row = by_seed.get(str(d.run_seed))
            if row is None:
                continue
            alpha, capacity = _limits(run_params(scenario, row))
            text = json.loads(d.value).get("community", "")
            effort = efforts.get((str(d.run_seed), int(d.agent_id), int(d.round) + 1))
            rows.append(
                _statement(
                    row,
                    int(d.round),
                    int(d.agent_id),
                    "llm",
                    text,
                    stated_cap(text),
                    effort,
                    alpha,
                    capacity,
                )
            )
    return pd.DataFrame(rows)
