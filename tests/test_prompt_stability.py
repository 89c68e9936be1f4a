"""A prompt is the same text in every process: the response cache and replay find an answer by
the request's text, so a prompt that carries a memory address (an object's default repr) or any
other per-process detail is never found again, and every rerun pays again.

Every game's real decisions (tests/variant_states.py: built with its rule or strategy players,
stepped, every decision its broker was asked) are rendered here and in a fresh interpreter; the
two must agree to the byte."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from variant_states import all_decisions, persona_of

from mesa_dilemmas.llm.population import register_game_prompts
from mesa_dilemmas.llm.prompts import render

TESTS = Path(__file__).parent

RENDER_ALL = """
import json, sys
sys.path.insert(0, {tests!r})
from test_prompt_stability import rendered
json.dump(rendered(), sys.stdout)
"""


def rendered() -> dict[str, list[str]]:
    """game -> every captured decision's prompt (system and user), in both answer modes."""
    from mesa_dilemmas.dilemmas.registry import game_model

    out: dict[str, list[str]] = {}
    for game, by_kind in sorted(all_decisions().items()):
        register_game_prompts(game_model(game))
        texts = out.setdefault(game, [])
        for kind in sorted(by_kind):
            for decision in by_kind[kind]:
                for mode in ("tags", "native"):
                    p = render(decision, mode=mode, persona=persona_of(decision), round_=1)
                    texts.append(p.system + "\n---\n" + p.user)
    return out


def test_every_games_prompts_are_the_same_text_in_a_fresh_process() -> None:
    here = rendered()
    assert set(here) >= {
        "fishery",
        "port_of_mars",
        "public_goods",
        "collective_risk",
        "common_pool",
    }
    for game, texts in here.items():
        assert texts, game
        for text in texts:  # an object's default repr: "<... object at 0x7f...>"
            assert " object at 0x" not in text, f"{game}: {text[:400]}"
    code = RENDER_ALL.format(tests=str(TESTS))
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=TESTS
    )
    assert done.returncode == 0, done.stderr[-3000:]
    there = json.loads(done.stdout)
    assert there == here
