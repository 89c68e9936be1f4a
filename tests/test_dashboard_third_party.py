"""A game and a provider from other packages, on the dashboard, with no edit of ours: the
installed example game (``examples/stag_hunt``, whose page is the generic page of its schema)
offers LLM seats, the page's provider choice lists a provider installed at test time (a real
distribution with its entry point, ``tests/test_llm_providers.py``), and a round plays with two
of the hunters answered by that provider."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from mesa_dilemmas.llm import providers, session
from mesa_dilemmas.viz.dashboard.app import PAGES
from mesa_dilemmas.viz.dashboard.components import default_params
from mesa_dilemmas.viz.dashboard.runtime import DashboardModel
from tests.test_llm_providers import install_echo


@pytest.fixture
def echo_dashboard(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.syspath_prepend(str(install_echo(tmp_path / "site")))
    monkeypatch.setenv("ECHO_API_KEY", "test-key")
    monkeypatch.setenv("MESA_DILEMMAS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("MESA_DILEMMAS_DASHBOARD_RECORD_DIR", str(tmp_path / "records"))
    monkeypatch.delenv("MESA_DILEMMAS_DASHBOARD_LLM_CONFIG", raising=False)
    providers.providers.cache_clear()
    with session.use(None):
        yield tmp_path
    providers.providers.cache_clear()


def test_an_installed_game_plays_llm_seats_of_an_installed_provider(echo_dashboard) -> None:
    page = next(p for p in PAGES if p.path == "stag_hunt")
    controls = page.controls()
    assert "llm_seats" in controls and "echo" in controls["llm_provider"]["values"]
    params = default_params({"page": page, **controls})
    m = DashboardModel(**{**params, "llm_seats": 2, "llm_provider": "echo", "n_hunters": 5})
    assert m.error is None and m.llm is not None and len(m.llm_agent_ids) == 2
    for _ in range(2):
        m.step()
        assert m.wait(30) and m.error is None
    assert m.round == 2
    summary = m.llm.summary()
    assert summary["decisions"] == 4 and summary["fallbacks"] == 0
    assert list(summary["by_model"]) == ["echo:echo-1"]
    # the two LLM hunters answered "stag" (the echo provider's first option), the rule
    # hunters played on beside them in the same rounds
    game = m.game
    llm_seats = [a for a in game.agents if a.unique_id in m.llm_agent_ids]
    assert all(str(a.policy.name).startswith("llm:echo") for a in llm_seats)
    # "Save as scenario" writes the LLM seats as the scenario's population, which validates
    from mesa_dilemmas.scenarios.config import validate
    from mesa_dilemmas.viz.dashboard.save_scenario import scenario_dict

    raw = scenario_dict(m)
    assert raw["population"]["groups"] == [{"llm": "echo", "count": 2}]
    assert "llm_seats" not in raw["params"]
    validate(raw)
