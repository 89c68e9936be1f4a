"""The instruments price themselves before they call anything (``--estimate``): every prompt of
the design rendered as it would be sent and counted, priced from the price table, no key, no
call, nothing stored where a run's gate would read it."""

from __future__ import annotations

import pytest
from cli_runner import cli

from mesa_dilemmas.instruments import persona_cases


def _table(stdout: str) -> dict[str, list[str]]:
    lines = stdout.splitlines()
    assert lines[0].split()[:2] == ["model", "calls"], stdout
    return {line.split()[0]: line.split() for line in lines[1:-1]}


def test_persona_check_prices_its_whole_design_without_a_key(tmp_path):
    done = cli(
        "personas", "check", "--llm", "openai:gpt-4o", "--game", "fishery", "--samples", "30",
        "--estimate", cache=tmp_path / "cache", cwd=tmp_path, env={"OPENAI_API_KEY": ""},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    row = _table(done.stdout)["openai:gpt-4o"]
    from mesa_dilemmas.instruments import load_instrument

    items = sum(
        len(load_instrument(name).items()) for c in persona_cases("fishery") for name in c.targets
    )
    assert int(row[1].replace(",", "")) == 30 * items  # every item of every sample, once
    assert row[5].startswith("$") and float(row[5].strip("$").replace(",", "")) > 0
    assert "every call rendered dry" in done.stdout
    assert not (tmp_path / "cache").exists() and not (tmp_path / "runs").exists()


@pytest.mark.parametrize("spec", ["openai:gpt-4o", "anthropic:claude-sonnet-4"])
def test_comprehension_prices_its_items_without_a_key(tmp_path, spec):
    done = cli(
        "comprehension", "--llm", spec, "--game", "public_goods", "--items", "100", "--estimate",
        cache=tmp_path / "cache", cwd=tmp_path,
        env={"OPENAI_API_KEY": "", "ANTHROPIC_API_KEY": ""},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    row = _table(done.stdout)[spec]
    assert row[1] == "100" and int(row[2].replace(",", "")) > 100 * 50  # real prompts counted
    assert not (tmp_path / "cache").exists() and not (tmp_path / "runs").exists()
