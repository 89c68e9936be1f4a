""" "Save as scenario": the game a page is showing, as a scenario TOML that ``mesa-dilemmas run``
accepts unchanged.

The page's seed is the scenario's seed: a page builds its game with the seed
``mesa-dilemmas run`` gives replication 0 of a scenario with that seed
(:func:`.runtime.model_seed`), so running the saved file replays the page's game round for
round (the browser test compares the page's numbers with the run's ``steps.parquet``).

What the file holds, per page:

* a page whose parameters are the game's own (most games, and pages of installed games):
  they are written to ``[params]`` as they are (``llm`` = the LLM spec when LLM agents
  take part);
* a page that says otherwise (its ``GamePage.scenario_of``) writes the body itself -- the
  C/D games' pages, whose counts per strategy become the seat order the page plays
  (``strategies``, one spec per seat), or with LLM players a ``[population]`` with
  explicit seats;
* a body that names its own ``experiment`` (a page that drives an experiment, one run of
  it): its runs may derive their generators differently from the page, so the file
  repeats the page's settings, not its numbers (and has no ``max_steps``).

The page's LLM answer mode and reply length go to ``[llm]``.
"""

from __future__ import annotations

from typing import Any

import tomli_w

from mesa_dilemmas.viz.dashboard.runtime import DashboardModel


def llm_table(model: DashboardModel) -> dict[str, Any]:
    """The page's LLM answer mode and reply length, as the scenario's ``[llm]``."""
    choice = model.llm_choice
    return {"answer_mode": choice.answer_mode, "max_tokens": choice.max_tokens}


def _model_params(model: DashboardModel) -> dict[str, Any]:
    params = dict(model.params)
    out: dict[str, Any] = {"params": params}
    if model.n_llm_agents:
        params["llm"] = model.llm_choice.spec
        out["llm"] = llm_table(model)
    return out


def scenario_dict(model: DashboardModel) -> dict[str, Any]:
    """The scenario (as TOML data) of the game ``model`` is showing."""
    page = model.page
    body = page.scenario_of(model) if page.scenario_of is not None else _model_params(model)
    settings_only = "experiment" in body  # an experiment's settings, not a replay of its game
    head: dict[str, Any] = {
        "name": f"{page.path}_seed{model.seed}",
        "description": (
            f"Saved from the dashboard's {page.path.replace('_', ' ')} page "
            f"({page.unit} {model.round} played); "
            + (
                "`mesa-dilemmas run` repeats its settings."
                if settings_only
                else "`mesa-dilemmas run` replays its game."
            )
        ),
        "game": body.pop("game", page.path),
        "seed": int(model.seed),
        "replications": 1,
    }
    if not settings_only:
        head["max_steps"] = max(int(body.pop("max_steps", 100)), model.round, 1)
    return {**head, **body}


def scenario_toml(model: DashboardModel) -> str:
    """:func:`scenario_dict` as TOML text (tables last, as a person writes one)."""
    return tomli_w.dumps(scenario_dict(model))
