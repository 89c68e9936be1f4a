"""Real game states for the prompt-variant tests: every game built with its bundled rule (or
strategy) players, stepped a few rounds, and every Decision its broker was asked captured.

Shared by ``test_prompt_variants.py`` (the equivalence of the wordings) and kept out of it so
the capture is one place; nothing here calls a model.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from mesa_dilemmas.agents.decisions import Decision
from mesa_dilemmas.agents.policy import Policy
from mesa_dilemmas.dilemmas.base import build_model
from mesa_dilemmas.dilemmas.registry import game_model, games

#: the C/D games (generic prompt) and the parameters they are built with
BINARY_PARAMS: dict[str, dict[str, Any]] = {
    "public_goods": {"strategies": ["tft(0.5)", "all_d", "grim(0.34)", "rnd(0.5)"], "k": 2.0},
    "collective_risk": {"strategies": ["tft(0.5)", "all_d", "rnd(0.5)"]},
    "common_pool": {"strategies": ["tft(0.5)", "all_d", "rnd(0.5)"]},
}


def _spy(model: Any, out: list[Decision]) -> None:
    ask_all = model.broker.ask_all

    def spy(decisions, ask_all=ask_all):
        out.extend(decisions)
        return ask_all(decisions)

    model.broker.ask_all = spy


def _pick(decisions: list[Decision], per_kind: int) -> dict[str, list[Decision]]:
    """Up to ``per_kind`` decisions of each kind, spread over the run (first, middle, last...)."""
    by_kind: dict[str, list[Decision]] = {}
    for d in decisions:
        by_kind.setdefault(d.kind, []).append(d)
    out = {}
    for kind, found in sorted(by_kind.items()):
        if len(found) <= per_kind:
            out[kind] = found
        else:
            step = (len(found) - 1) / (per_kind - 1)
            out[kind] = [found[round(i * step)] for i in range(per_kind)]
    return out


class _Villager(Policy):
    """A scripted LLM villager: distinct proposals (so votes happen), moderate efforts."""

    name = "scripted"
    strict = False

    def decide(self, decision):
        kind = decision.kind.rsplit(".", 1)[-1]
        me = decision.agent.unique_id
        if kind == "effort":
            return round(0.2 + 0.1 * (me % 5), 2)
        if kind == "punish":
            return "none"
        if kind == "norms":
            return {
                "personal": f"I fish with effort {0.1 * me:.1f}.",
                "community": f"Everyone should fish with effort {0.1 * (me % 3 + 2):.1f} at most.",
            }
        return decision.spec.options[0]


def fishery_decisions(per_kind: int = 3) -> dict[str, list[Decision]]:
    from mesa_dilemmas.dilemmas.fishery.model import FisheryModel

    out: list[Decision] = []
    for seed, extra in ((7, {}), (11, {"social_learning": False}), (5, {"n_agents": 5})):
        params = {
            "n_agents": 4,
            "llm_agents": 4,
            "llm": "replay",
            "population": "typed",
            "altruism_ratio": 0.5,
            "stop_at_collapse": False,
            **extra,
        }
        params["llm_agents"] = params["n_agents"]
        model = build_model(FisheryModel, params, seed)
        for v in model.villagers:
            policy = _Villager()
            policy.bind(v)
            v.policy = policy
        _spy(model, out)
        for _ in range(3):
            model.step()
    return _pick(out, per_kind)


def port_of_mars_decisions(per_kind: int = 3) -> dict[str, list[Decision]]:
    from mesa_dilemmas.dilemmas.port_of_mars.model import PortOfMarsModel

    out: list[Decision] = []
    for seed in range(4):
        model = PortOfMarsModel(
            rng=seed, events_in_first_round=True, leadership="announce", meeting_turns=seed % 2
        )
        model.texts_for_all = True
        _spy(model, out)
        for _ in range(4):
            if model.running:
                model.step()
    return _pick(out, per_kind)


def binary_decisions(game: str, per_kind: int = 3) -> dict[str, list[Decision]]:
    out: list[Decision] = []
    for seed in (3, 4):
        model = build_model(game_model(game), {"n_players": 4, **BINARY_PARAMS[game]}, seed)
        _spy(model, out)
        for _ in range(4):
            if model.running:
                model.step()
    return _pick(out, per_kind)


def stag_hunt_decisions(per_kind: int = 3) -> dict[str, list[Decision]]:
    """The example plugin game (``stag_hunt``, rule players), when installed."""
    from mesa_dilemmas.scenarios.config import load_scenario

    scenario, _ = load_scenario("stag_hunt/trust")
    params = {**scenario.params, **{k: v[0] for k, v in scenario.grid.items()}}
    out: list[Decision] = []
    model = build_model(game_model("stag_hunt"), params, 3)
    _spy(model, out)
    for _ in range(4):
        if model.running:
            model.step()
    return _pick(out, per_kind)


@cache
def all_decisions(per_kind: int = 3) -> dict[str, dict[str, list[Decision]]]:
    """game -> kind -> decisions (real states of every registered game)."""
    out = {
        "fishery": fishery_decisions(per_kind),
        "port_of_mars": port_of_mars_decisions(per_kind),
    }
    for game in BINARY_PARAMS:
        out[game] = binary_decisions(game, per_kind)
    if "stag_hunt" in games():
        out["stag_hunt"] = stag_hunt_decisions(per_kind)
    return out


def persona_of(decision: Decision) -> Any:
    return getattr(decision.agent, "persona", None)


def say_vs_do_decisions(per_kind: int = 3) -> dict[str, list[Decision]]:
    """The say-vs-do instrument's decisions (its two prompts: the strategy's description, its
    code) as its study builds them: a reference strategy played against the seeded opponent
    mix of two games, rounds early, middle and last."""
    from mesa_dilemmas.dilemmas.binary.experiments import say_vs_do as svd
    from mesa_dilemmas.dilemmas.binary.prompts import game_rules
    from mesa_dilemmas.dilemmas.binary.rules import ACTION_SPEC
    from mesa_dilemmas.dilemmas.binary.strategies.loader import StrategyEntry

    out: list[Decision] = []
    for game, spec in (("public_goods", "tft(0.5)"), ("common_pool", "grim(0.34)")):
        rules = svd.make_rules(game, 4, 6)
        entry = StrategyEntry.reference(spec)
        play = svd.play_code(entry, rules, svd.opponent_trajectories(rules, 2, 0), 0)
        code, build = svd.code_of(entry)
        for mode in svd.MODES:
            for t in (0, 3, 5):
                history, now = svd.render_history(play, 1, t, 6)
                obs = {
                    "rules": game_rules(rules.NAME),
                    "params": svd.match_params(rules),
                    "strategy": svd.describe_entry(entry),
                    "code": code.rstrip(),
                    "build": build,
                    "history": history,
                    "now": now,
                }
                out.append(Decision(svd.KIND[mode], ACTION_SPEC, obs, step=t, fallback=None))
    return _pick(out, per_kind)
