"""The per-game pages' numbers and words (no browser): what each page says agrees with the game.

Binary games: payoffs are drawn against the bounds that hold for them; the common pool
says when it is depleted; collective risk shows its threshold.  Fishery: who punished
whom, the villager count, the group norm against the adopted policy.  Port of Mars: the
moment the meeting describes and why a meeting is missing.  Cultural evolution: the
population strip.  LLM rounds: progress, context overflows and stop reasons.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mesa_dilemmas.dilemmas.binary import page as binary
from mesa_dilemmas.dilemmas.binary.rules import make_game
from mesa_dilemmas.dilemmas.fishery import page as fishery
from mesa_dilemmas.dilemmas.fishery.model import FisheryModel
from mesa_dilemmas.dilemmas.port_of_mars import page as port_of_mars
from mesa_dilemmas.dilemmas.port_of_mars.model import PortOfMarsModel
from mesa_dilemmas.llm import session
from mesa_dilemmas.viz.dashboard.app import PAGES
from mesa_dilemmas.viz.dashboard.components import default_params
from mesa_dilemmas.viz.dashboard.llm_panel import is_context_overflow, llm_fix, stop_reason
from mesa_dilemmas.viz.dashboard.runtime import DashboardModel, GamePage

PAGE_BY_PATH = {p.path: p for p in PAGES}


def model_for(page: GamePage, **overrides: Any) -> DashboardModel:
    params = default_params({"page": page, **page.controls()})
    return DashboardModel(**{**params, **overrides})


# -- binary games: payoffs and their bounds ---------------------------------------


@pytest.mark.parametrize(
    ("game", "params"),
    [
        ("common_pool", {}),
        ("common_pool", {"growth": 1.2}),
        ("public_goods", {"k": 2.0}),
        ("collective_risk", {"k": 1.5}),
    ],
)
def test_the_bounds_so_far_hold_for_every_play_of_the_rounds_so_far(
    game: str, params: dict[str, Any]
) -> None:
    """Every sequence of cooperator counts over t rounds averages within ``bounds_so_far(t)``,
    and the best and worst are reached (enumerated: 3 players, up to 4 rounds); the common
    pool with regrowth below 2 has only the game's approximate references, and says so."""
    rules = make_game(game, 3, 4, **params)
    exact = binary.exact_bounds(rules)
    for t in range(1, 5):
        low, high = binary.bounds_so_far(rules, t)
        plays = [rules.play_counts(list(c)) for c in itertools.product(range(4), repeat=t)]
        if exact:
            assert max(plays) == pytest.approx(high) and min(plays) == pytest.approx(low)
        else:  # the game's own references for slow regrowth: plays it names, not extremes
            assert min(plays) - 1e-9 <= high <= max(plays) + 1e-9
    assert exact == (params.get("growth", 2.0) >= 2.0)
    assert binary.bounds_so_far(rules, 4) == pytest.approx(rules.welfare_bounds())


def test_common_pool_payoffs_never_exceed_what_the_page_draws_as_possible() -> None:
    """The old contradiction (3.0 in round 1 above a 'maximum' of 2.10): a round is bounded by
    the stock it started with, an average so far by the bounds over that many rounds."""
    m = model_for(PAGE_BY_PATH["common_pool"])
    for _ in range(8):
        m.step()
    v = m.view
    n, start = len(v.players), v.stock[:-1]
    assert v.mean_payoff[0] > v.welfare[1]  # round 1 pays more than the best game average ...
    for pay, s in zip(v.mean_payoff, start, strict=True):  # ... but never more than the stock
        assert s / (2 * n) - 1e-9 <= pay <= s / n + 1e-9
    average = np.cumsum(v.mean_payoff) / np.arange(1, len(v.mean_payoff) + 1)
    lows, highs = v.bounds_so_far
    assert all(lo - 1e-9 <= a <= hi + 1e-9 for a, lo, hi in zip(average, lows, highs, strict=True))
    eff = (average[-1] - lows[-1]) / (highs[-1] - lows[-1])
    assert v.metrics["welfare_efficiency"] == pytest.approx(eff)


def test_a_depleted_common_pool_is_said_so_with_the_round_that_emptied_it() -> None:
    m = model_for(PAGE_BY_PATH["common_pool"], n_all_d=4, n_tft_0_5=0, n_grim_0_34=0, n_rnd_0_5=0)
    assert m.view.depleted_in is None
    m.step()  # four defectors take the whole stock in round 1
    assert m.view.stock[-1] == 0 and m.view.depleted_in == 1
    m.step()
    assert m.view.depleted_in == 1 and m.view.mean_payoff[-1] == 0
    kept = model_for(
        PAGE_BY_PATH["common_pool"], n_all_c=4, n_all_d=0, n_tft_0_5=0, n_grim_0_34=0, n_rnd_0_5=0
    )
    for _ in range(5):
        kept.step()
    assert kept.view.depleted_in is None and kept.view.stock[-1] > 0


def test_collective_risk_shows_the_threshold_the_game_uses() -> None:
    m = model_for(PAGE_BY_PATH["collective_risk"])
    m.step()
    assert m.view.threshold == m.game.rules.m >= 2
    from mesa_dilemmas.dilemmas.binary.agent_view import binary_chart

    met = "met" if m.game.actions[-1].sum() >= m.game.rules.m else "missed"
    assert f"(threshold m = {m.game.rules.m}: {met})" in binary_chart(m.game)[2]
    m = model_for(PAGE_BY_PATH["collective_risk"], m=3)
    assert m.view.threshold == 3


def test_strategy_colours_are_never_the_colours_of_c_and_d() -> None:
    from mesa_dilemmas.viz.dashboard.agent_views import ACTION_COLORS

    assert not {ACTION_COLORS["C"], ACTION_COLORS["D"]} & set(binary.STRATEGY_COLORS)


# -- fishery ----------------------------------------------------------------------


def test_who_punished_whom_matches_the_games_sanctions_and_fines() -> None:
    model = FisheryModel(rng=42)
    seen = 0
    for _ in range(6):
        model.step()
        pairs = model.sanctions
        assert len(pairs) == model.punishments
        counts = np.bincount([b for _, b in pairs], minlength=len(model.villagers))
        assert counts.tolist() == model.seats.get("punished")
        assert all(a != b and model.villagers[a].alive for a, b in pairs)
        seen += len(pairs)
    assert seen > 0
    from mesa_dilemmas.dilemmas.fishery.agent_view import fishery_chart, sanctions_text

    _, _, caption = fishery_chart(model)
    ids = {v.slot: v.unique_id for v in model.villagers}
    text = sanctions_text([(ids[a], ids[b]) for a, b in model.sanctions])
    assert text.split(": ", 1)[1] in caption
    assert sanctions_text([]) == "who punished whom this round: nobody punished"


def test_no_sanctions_are_drawn_when_punishment_is_off() -> None:
    model = FisheryModel(rng=42, punishment=False)
    for _ in range(3):
        model.step()
        assert model.sanctions == [] and model.punishments == 0


def test_the_group_norm_chart_and_the_adopted_policy_state_the_same_cap() -> None:
    """The issue saw the chart near 0.1 while the policy read 3.10 fish; both are the cap now."""
    m = model_for(PAGE_BY_PATH["fishery"])
    for r in range(1, 11):
        m.step()
        cap = float(re.search(r"at most ([0-9.]+) fish", m.view.shared_policy).group(1))
        assert m.view.series["group_norm"][-1] == pytest.approx(cap, abs=0.005), r


def test_the_villager_count_is_one_number_split_into_rule_and_llm() -> None:
    """'villagers 10 general; 2 LLM' read as 12: now 10 = 8 rule + 2 LLM."""
    villagers = [
        fishery.Villager(i, "LLM" if i < 2 else "rule", d, True, 0.0, 0.0, 0.0, "")
        for i, d in enumerate(["selfish"] * 6 + ["altruistic"] * 4)
    ]
    assert fishery.population_text(villagers) == ("10 (8 rule + 2 LLM)", "4 altruistic, 6 selfish")
    assert fishery.population_text(villagers[2:])[0] == "8 (all rule-based)"


def test_a_collapsed_lake_shows_the_banner_round() -> None:
    m = model_for(PAGE_BY_PATH["fishery"], capacity=50, growth_rate=0.1, n_agents=20)
    for _ in range(30):
        if not m.game_running:
            break
        m.step()
    assert m.view.collapsed and m.view.survival_time >= 1


# -- Port of Mars ----------------------------------------------------------------


def test_the_meeting_health_and_the_end_of_round_health_differ_by_the_rounds_ledger() -> None:
    """The meeting said 53 while the card showed 78: the meeting sits after wear and events,
    the card is the end of the round.  The page labels both; they differ by exactly what was
    invested and what dirty accomplishments cost in between."""
    model = PortOfMarsModel(rng=42, n_rounds=8)
    while model.running:
        model.step()
        view = port_of_mars.snapshot(model)
        if model.round >= model.n_rounds_total or model.collapsed:
            break
        invested = sum(p.health_units_round for p in model.seats)
        dirty = sum(p.dirty_cost_round for p in model.seats)
        expected = min(model.MAX_HEALTH, max(0, view.meeting_health + invested - dirty))
        assert view.health[-1] == expected
        if view.meeting:
            said = re.search(r"Port health is (\d+)", view.meeting)
            assert said is None or int(said.group(1)) == view.meeting_health


def test_a_missing_meeting_says_why() -> None:
    off = PortOfMarsModel(rng=1, meeting=False)
    off.step()
    assert "switched off" in port_of_mars.meeting_absent(off, "rule_narrator")
    fresh = PortOfMarsModel(rng=1)
    assert "first one sits in round 1" in port_of_mars.meeting_absent(fresh, "rule_narrator")
    flare = None
    for seed in range(200):  # a Solar Flare closes the chat in some round of some game
        model = PortOfMarsModel(rng=seed, n_rounds=8)
        while model.running and not model.effects.chat_closed:
            model.step()
        if model.effects.chat_closed and not model.meeting_conversation:
            flare = model
            break
    assert flare is not None
    assert "Solar Flare" in port_of_mars.meeting_absent(flare, "rule_narrator")


# -- cultural evolution -------------------------------------------------------------


def test_the_population_strip_is_the_population_the_shares_describe() -> None:
    m = model_for(
        PAGE_BY_PATH["cultural_evolution"], population=64, survivors=16, max_generations=5
    )
    assert [a["kind"] for a in m.view.agents] == ["initial"] * 64
    for _ in range(3):
        m.step()
    agents, genes = m.view.agents, m.view.genes
    assert len(agents) == 64
    shares = [sum(a["gene"] == g for a in agents) / 64 for g in genes]
    assert shares == pytest.approx(m.view.current)
    assert [a["kind"] for a in agents] == ["survivor"] * 16 + ["offspring"] * 48


# -- LLM rounds ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "local: Requested tokens (3012) exceed context window of 2048",
        "openai: 400 This model's maximum context length is 8192 tokens. However, you requested 9000",
        "anthropic: 400 prompt is too long: 210000 tokens > 200000 maximum",
        "ContextOverflow: fishery.effort needs 3012 tokens, n_ctx is 2048",
    ],
)
def test_context_overflows_are_recognised_and_get_the_fix(text: str) -> None:
    assert is_context_overflow(text)
    assert "n_ctx = 8192" in llm_fix(text, "local")
    assert "larger context window" in llm_fix(text, "openai")


@pytest.mark.parametrize("text", ["HTTP 500 from the server", "endpoint unreachable", "", None])
def test_other_errors_are_not_called_overflows(text: str | None) -> None:
    assert not is_context_overflow(text) and llm_fix(text) == ""


@pytest.fixture
def isolated_llm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("MESA_DILEMMAS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("MESA_DILEMMAS_DASHBOARD_RECORD_DIR", str(tmp_path / "records"))
    with session.use(None):  # no active LLM run before or after
        yield tmp_path


def test_a_prompt_larger_than_the_local_context_is_named_with_its_fix(
    isolated_llm: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bundled model with a 256-token window: the fishery's prompts do not fit.  Whether the
    LLM layer stops the run or lets the decisions fall back, the page names the overflow."""
    pytest.importorskip("llama_cpp")
    config = isolated_llm / "llm.toml"
    config.write_text("[llm]\nmax_retries = 0\nanswer_retries = 0\n[llm.local]\nn_ctx = 256\n")
    monkeypatch.setenv("MESA_DILEMMAS_DASHBOARD_LLM_CONFIG", str(config))
    m = model_for(PAGE_BY_PATH["fishery"], n_agents=3, llm_agents=1)
    if m.error is None:
        m.step()
        assert m.wait(120)
    if m.error:  # the run stopped: the panel's stop reason says why and how to fix it
        reason = stop_reason(m)
        assert reason is not None and "context window" in reason[0] and "n_ctx" in reason[1]
    else:
        errors = m.llm.errors()
        assert errors and all(is_context_overflow(e["error"]) for e in errors)
        progress = m.llm.round_progress(1)
        assert progress["failed"] >= 1 and progress["answered"] == 0
    m.close()


def test_a_stop_reason_is_named_from_the_llm_layers_exception() -> None:
    class Stopped:
        error = "round 3 failed: the provider rejected the key (401)"
        detail = "Traceback ...\nmesa_dilemmas.llm.errors.ProviderRejected: rejected key (401)\n"

        class llm:  # noqa: N801 - stands for the LLM run's choice
            class choice:  # noqa: N801
                provider = "openai"

    reason = stop_reason(Stopped())  # type: ignore[arg-type]
    assert reason is not None and reason[0] == "the provider rejected the API key"


def test_a_failed_llm_meeting_says_it_failed_and_why(
    isolated_llm: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An LLM meeting writer whose prompt does not fit the window (the bundled model with 256
    tokens): the meeting card names the failure and its fix, not "none held"."""
    pytest.importorskip("llama_cpp")
    config = isolated_llm / "llm.toml"
    config.write_text("[llm]\nmax_retries = 0\nanswer_retries = 0\n[llm.local]\nn_ctx = 256\n")
    monkeypatch.setenv("MESA_DILEMMAS_DASHBOARD_LLM_CONFIG", str(config))
    m = model_for(PAGE_BY_PATH["port_of_mars"], meeting_writer="llm")
    assert m.error is None and m.llm is not None and m.n_llm_agents == 1
    m.step()
    assert m.wait(120)
    if m.error:  # the LLM layer stopped the run instead: the stop reason names the overflow
        assert "context window" in stop_reason(m)[0]
    else:
        assert m.view.meeting is None and "gave no usable conversation" in m.view.meeting_absent
        failure = port_of_mars._meeting_failure(m, 1)
        assert failure and is_context_overflow(failure)
    m.close()
