"""Prompt variants: every decision template of every game (and the generic prompt) has k >= 5
frozen rewordings that carry the same numbers, options, answer format and observation fields as
the base at real game states (captured from the games' brokers, tests/variant_states.py), in
words that differ from the base and from each other; variant 0 is byte-identical to the prompts
of commit d6cd4b3 (caches and fingerprints stay valid); a variant a template lacks fails fast."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import re
import string
import subprocess
import sys
import tomllib
from itertools import combinations
from pathlib import Path

import pytest
from llm_fixtures import llm_env  # noqa: F401
from variant_states import all_decisions, persona_of

from mesa_dilemmas.dilemmas.registry import game_model
from mesa_dilemmas.llm import prompts
from mesa_dilemmas.llm.errors import LLMConfigError
from mesa_dilemmas.llm.population import register_game_prompts
from mesa_dilemmas.llm.prompts import GENERIC_VARIANTS, Template, VariantError, render
from mesa_dilemmas.llm.settings import LLMSettings

REPO = Path(__file__).resolve().parents[1]
BASE_COMMIT = "d6cd4b3"  # the renderer and templates before variants existed
PROMPT_DIRS = {
    "fishery": REPO / "mesa_dilemmas/dilemmas/fishery/prompts",
    "port_of_mars": REPO / "mesa_dilemmas/dilemmas/port_of_mars/prompts",
}
SAY_VS_DO = REPO / "mesa_dilemmas/dilemmas/binary/prompts/say_vs_do.toml"
MIN_VARIANTS = 5
#: the most two wordings of one template may share (token-set Jaccard of their own words)
MAX_JACCARD = 0.6
#: what a fishery villager must never be told, in any wording (tests/test_fishery_llm.py)
FISHERY_LEAKS = ("catchab", "alpha", "regrow", "logistic", "growth", "formula", "h =", "carrying")

NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?")
ADDRESS = re.compile(r" at 0x[0-9a-f]+")  # an object's repr in an observation


@pytest.fixture(scope="module", autouse=True)
def _games_registered():
    for game in PROMPT_DIRS:
        register_game_prompts(game_model(game))
    for kind, template in say_vs_do_templates().items():  # what say_vs_do.register() should do
        prompts.register_template(kind, template)


@pytest.fixture(scope="module")
def states():
    from variant_states import say_vs_do_decisions

    return {**all_decisions(), "say_vs_do": say_vs_do_decisions()}


def numbers(text: str) -> set[str]:
    """The numeric tokens of a text (object addresses masked)."""
    return {n.rstrip("0").rstrip(".") if "." in n else n for n in NUMBER.findall(mask(text))}


def mask(text: str) -> str:
    return ADDRESS.sub(" at 0x?", text)


def fields_of(text: str | None) -> set[str]:
    return {f for _, f, _, _ in string.Formatter().parse(text or "") if f is not None}


def words(text: str) -> set[str]:
    """The template's own words: placeholders removed, lower case, letters only."""
    plain = re.sub(r"\{[^{}]*\}", " ", text)
    return set(re.findall(r"[a-z']+", plain.lower()))


def jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a | b else 1.0


def wordings(template: Template) -> list[Template]:
    return [template.variant(v) for v in range(template.k)]


def game_templates() -> dict[str, Template]:
    out = {}
    for game, directory in PROMPT_DIRS.items():
        out.update(prompts.load_template_dir(str(directory), game))
    return out


def say_vs_do_templates() -> dict[str, Template]:
    """The say-vs-do instrument's two prompts (binary/prompts/say_vs_do.toml) with their
    wordings, as ``Template.from_table`` reads its tables."""
    data = tomllib.loads(SAY_VS_DO.read_text())
    return {
        f"say_vs_do.{mode}": Template.from_table(data[mode], str(SAY_VS_DO))
        for mode in ("description", "code")
    }


def all_templates() -> dict[str, Template]:
    return {**game_templates(), **say_vs_do_templates()}


# -- the files ---------------------------------------------------------------------------------


def test_every_template_and_the_generic_prompt_have_k_wordings():
    templates = all_templates()
    assert len(templates) == 4 + 13 + 2
    short = {k: t.k - 1 for k, t in templates.items() if t.k - 1 < MIN_VARIANTS}
    assert not short, short
    assert len(GENERIC_VARIANTS) - 1 >= MIN_VARIANTS
    for kind, template in templates.items():
        assert all(w.tag == template.tag for w in wordings(template)), kind


@pytest.mark.parametrize("kind", sorted(all_templates()))
def test_each_wording_uses_the_same_fields_in_its_own_words(kind):
    template = all_templates()[kind]
    base = wordings(template)[0]
    need = fields_of(base.user) | fields_of(base.system)
    own = [words(f"{w.system or ''} {w.user}") for w in wordings(template)]
    for v, w in enumerate(wordings(template)[1:], start=1):
        assert fields_of(w.user) | fields_of(w.system) == need, (kind, v)
        # the answer format: a template that writes {instructions} keeps it in every wording
        assert ("{instructions}" in w.user) == ("{instructions}" in base.user), (kind, v)
        if kind.startswith("fishery."):
            low = f"{w.system} {w.user}".lower()
            assert not any(leak in low for leak in FISHERY_LEAKS), (kind, v)
    for (i, a), (j, b) in combinations(enumerate(own), 2):
        assert jaccard(a, b) < MAX_JACCARD, (kind, i, j, round(jaccard(a, b), 2))


def test_the_generic_wordings_differ():
    own = [words(f"{s} {u}") for s, u in GENERIC_VARIANTS]
    for (i, a), (j, b) in combinations(enumerate(own), 2):
        assert jaccard(a, b) < MAX_JACCARD, (i, j, round(jaccard(a, b), 2))
    for _, user in GENERIC_VARIANTS:
        assert fields_of(user) == {"round", "title", "observation"}


# -- at real game states -----------------------------------------------------------------------


def instructions_of(decision, mode: str, tag: str) -> str:
    """The answer instructions the renderer writes for this decision (a probe template that is
    nothing but them)."""
    probe = dataclasses.replace(decision, kind="variant_probe.instructions")
    probe_template = Template(user="{instructions}\n\n{example}", system="-", tag=tag)
    prompts.register_template(probe.kind, probe_template)
    return render(probe, mode=mode, persona=persona_of(decision), round_=decision.step).user


def options_of(spec) -> list[str]:
    found = getattr(spec, "options", None) or getattr(getattr(spec, "item", None), "options", None)
    return [str(o) for o in found or ()]


def test_wordings_carry_the_same_numbers_options_and_answer_format(states):
    checked = {"templates": set(), "variants": 0, "states": 0, "renderings": 0}
    for game, kinds in states.items():
        for kind, decisions in kinds.items():
            k = prompts.variant_count(kind)
            assert k - 1 >= MIN_VARIANTS, kind
            checked["templates"].add(kind if prompts.template_for(kind) else f"generic:{game}")
            checked["variants"] += k - 1
            for d in decisions:
                checked["states"] += 1
                for mode in ("tags", "native"):
                    kw = {"mode": mode, "persona": persona_of(d), "round_": d.step}
                    base = render(d, **kw)
                    text0 = mask(f"{base.system}\n{base.user}")
                    instructions = mask(instructions_of(d, mode, base.tag)).strip()
                    assert instructions in mask(base.user)
                    seen = {text0}
                    for v in range(1, k):
                        p = render(d, variant=v, **kw)
                        text = mask(f"{p.system}\n{p.user}")
                        where = (kind, d.step, mode, v)
                        assert numbers(text) == numbers(text0), (
                            where,
                            numbers(text) ^ numbers(text0),
                        )
                        assert instructions in mask(p.user), where
                        assert all(o in text for o in options_of(d.spec)), where
                        assert (p.tag, p.schema, p.max_tokens, p.reasoning) == (
                            base.tag,
                            base.schema,
                            base.max_tokens,
                            base.reasoning,
                        ), where
                        assert text not in seen, where  # a wording of its own
                        seen.add(text)
                        checked["renderings"] += 1
    n_templates = len(checked["templates"])
    print(
        f"\nprompt variants checked: {n_templates} templates, {checked['variants']} variants, "
        f"{checked['states']} game states, {checked['renderings']} variant renderings (tags + native)"
    )
    assert n_templates >= 17 + 2 + 3  # fishery, Port of Mars, say-vs-do; the C/D games
    assert checked["renderings"] >= 5 * 2 * checked["states"]


# -- variant 0 is today's prompt, byte for byte ------------------------------------------------


def _git_show(path: str) -> str:
    try:
        out = subprocess.run(
            ["git", "-C", str(REPO), "show", f"{BASE_COMMIT}:{path}"],
            capture_output=True,
            text=True,
            check=True,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        pytest.skip(f"no git history with commit {BASE_COMMIT}")
    return out.stdout


def test_variant_zero_renders_byte_identically_to_the_renderer_before_variants(states, tmp_path):
    source = tmp_path / "prompts_before.py"
    source.write_text(_git_show("mesa_dilemmas/llm/prompts.py"))
    spec = importlib.util.spec_from_file_location("prompts_before_variants", source)
    old = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = old
    try:
        spec.loader.exec_module(old)
        for game, directory in PROMPT_DIRS.items():  # the templates as they were then
            for path in sorted(directory.glob("*.toml")):
                rel = path.relative_to(REPO).as_posix()
                data = tomllib.loads(_git_show(rel))
                old.register_template(
                    f"{game}.{path.stem}",
                    old.Template(data["user"], data.get("system"), data.get("tag", "answer")),
                )
        data = tomllib.loads(_git_show(SAY_VS_DO.relative_to(REPO).as_posix()))
        for mode in ("description", "code"):
            old.register_template(
                f"say_vs_do.{mode}", old.Template(data[mode]["user"], data[mode]["system"])
            )
        n = 0
        for kinds in states.values():
            for decisions in kinds.values():
                for d in decisions:
                    for mode in ("tags", "native"):
                        kw = {"mode": mode, "persona": persona_of(d), "round_": d.step}
                        for extra in (None, "Be brief."):
                            a = old.render(d, system_extra=extra, **kw)
                            b = render(d, system_extra=extra, variant=0, **kw)
                            assert (a.system, a.user, a.tag, a.schema, a.max_tokens) == (
                                b.system,
                                b.user,
                                b.tag,
                                b.schema,
                                b.max_tokens,
                            ), d.kind
                            n += 1
        assert n == 4 * sum(len(ds) for kinds in states.values() for ds in kinds.values())
    finally:
        sys.modules.pop(spec.name, None)


def test_the_base_templates_are_unchanged():
    for directory in PROMPT_DIRS.values():
        for path in sorted(directory.glob("*.toml")):
            before = tomllib.loads(_git_show(path.relative_to(REPO).as_posix()))
            now = tomllib.loads(path.read_text())
            assert {k: now.get(k) for k in before} == before, path.name
    before = tomllib.loads(_git_show(SAY_VS_DO.relative_to(REPO).as_posix()))
    now = tomllib.loads(SAY_VS_DO.read_text())
    for table in before:
        assert {k: now[table].get(k) for k in before[table]} == before[table], table


# -- fail fast; overrides; the shared framing --------------------------------------------------


def test_a_variant_beyond_k_is_an_error_naming_the_template(states):
    d = states["fishery"]["fishery.effort"][0]
    with pytest.raises(VariantError, match=r"beyond the 6 wordings .*effort\.toml"):
        render(d, mode="tags", variant=6)
    g = states["public_goods"]["public_goods.action"][0]
    with pytest.raises(VariantError, match="generic prompt"):
        render(g, mode="tags", variant=len(GENERIC_VARIANTS))
    assert isinstance(VariantError("x"), LLMConfigError)
    with pytest.raises(LLMConfigError, match="llm.prompt_variant"):
        LLMSettings.from_table({"prompt_variant": -1})


def test_templates_dir_overrides_keep_working(states, tmp_path):
    d = states["fishery"]["fishery.effort"][0]
    own = tmp_path / "mine"
    own.mkdir()
    (own / "fishery.effort.toml").write_text(
        'system = "S0"\nuser = "base {obs[villager]}"\n'
        '[[variants]]\nuser = "reworded {obs[villager]}"\n'
    )
    p1 = render(d, mode="tags", templates_dir=str(own), variant=1)
    assert p1.system == "S0" and p1.user.startswith("reworded ")
    with pytest.raises(VariantError, match=r"fishery\.effort\.toml"):
        render(d, mode="tags", templates_dir=str(own), variant=2)
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "x.toml").write_text('user = "u"\n[[variants]]\nsystem = "no user"\n')
    with pytest.raises(ValueError, match=r"variants\[0\] has keys user \(required\)"):
        prompts.load_template_dir(str(tmp_path / "bad"))


def test_variant_system_gives_each_games_framing(states):
    effort = prompts.template_for("fishery.effort")
    assert prompts.variant_system("fishery", 0) == effort.system
    assert prompts.variant_system("fishery", 4) == effort.variants[3].system
    d = states["port_of_mars"]["port_of_mars.invest"][0]
    common = d.observation["common"]
    assert prompts.variant_system("port_of_mars", 0, obs=d.observation) == common
    framed = prompts.variant_system("port_of_mars", 2, obs=d.observation)
    assert common in framed and framed != common
    assert prompts.variant_system("public_goods", 3) == GENERIC_VARIANTS[3][0]
    with pytest.raises(VariantError):
        prompts.variant_system("fishery", 9)


# -- prompt_variant as a factor: a policy's setting, --set, a group's llm_options, a grid axis ---


def test_a_policy_renders_and_records_its_variant(states, tmp_path, llm_env):  # noqa: F811
    import sqlite3

    from mesa_dilemmas.llm import make_policy, session

    d = states["fishery"]["fishery.effort"][0]
    settings = LLMSettings.from_table({"dry_run": True, "prompt_variant": 3})
    session.start_run(settings, tmp_path / "run")
    try:
        policy = make_policy("openai:m@http://127.0.0.1:9/v1", settings=settings)
        assert policy.settings.prompt_variant == 3
        again = make_policy("openai:m@http://127.0.0.1:9/v1", prompt_variant=1)  # llm_options
        assert again.settings.prompt_variant == 1 and again.settings.dry_run
        policy.decide(d)
    finally:
        session.finish_run()
    with sqlite3.connect(tmp_path / "run" / "llm_calls.sqlite") as db:
        (variant, request), *_ = db.execute("SELECT variant, request FROM calls").fetchall()
        (decided,) = db.execute("SELECT variant FROM decisions").fetchone()
    sent = [m["content"] for m in json.loads(request)["messages"]]
    want = render(d, mode="tags", persona=persona_of(d), round_=d.step, variant=3)
    assert (variant, decided) == (3, 3)
    assert sent[0] == want.system == prompts.template_for(d.kind).variants[2].system


def test_set_and_grid_reach_the_llm_players():
    from mesa_dilemmas.scenarios.config import ConfigError, load_scenario

    scenario, _ = load_scenario("fishery/prompt_variants")
    tables = scenario.grid["players"]
    assert [t["groups"][0]["llm_options"]["prompt_variant"] for t in tables] == [0, 1, 2, 3, 4]
    assert all(t["groups"][0]["llm"] == "local" and t["groups"][0]["count"] == 3 for t in tables)
    assert "llm_agents" not in scenario.params and "llm" not in scenario.params
    fixed, _ = load_scenario("fishery/prompt_variants", ["llm.prompt_variant=2"])
    assert fixed.llm["prompt_variant"] == 2 and "players" not in fixed.grid
    two, _ = load_scenario(
        "fishery/prompt_variants",
        ["grid.llm.prompt_variant=[1, 3]", 'grid.llm=["local", "openai:gpt-4o-mini"]'],
    )
    assert [
        (t["groups"][0]["llm"], t["groups"][0]["llm_options"]["prompt_variant"])
        for t in two.grid["players"]
    ] == [("local", 1), ("local", 3), ("openai:gpt-4o-mini", 1), ("openai:gpt-4o-mini", 3)]
    societies, _ = load_scenario("fishery/llm_societies", ["grid.llm.prompt_variant=[0, 2]"])
    assert list(societies.grid) == ["growth_rate", "altruism_ratio", "players"]  # beside llm=[..]
    assert [t["groups"][0]["llm_options"] for t in societies.grid["players"]] == [
        {"prompt_variant": 0},
        {"prompt_variant": 2},
    ]
    with pytest.raises(ConfigError, match=r"grid\.llm\.prompt_varient: unknown LLM setting"):
        load_scenario("fishery/prompt_variants", ["grid.llm.prompt_varient=[1]"])
    with pytest.raises(ConfigError, match=r"grid\.llm\.prompt_variant\[1\]: llm\.prompt_variant"):
        load_scenario("fishery/prompt_variants", ["grid.llm.prompt_variant=[0, -2]"])
    with pytest.raises(ConfigError, match=r"llm\.prompt_variant: 6 is beyond the 6 wordings"):
        load_scenario("fishery/prompt_variants", ["llm.prompt_variant=6"])  # before any call
    with pytest.raises(ConfigError, match=r"prompt_variant: 9 is beyond the 6 wordings"):
        load_scenario("fishery/prompt_variants", ["grid.llm.prompt_variant=[0, 9]"])
    assert prompts.game_wordings("public_goods") == len(GENERIC_VARIANTS)
    with pytest.raises(
        ConfigError, match=r"grid\.llm\.prompt_variant: the players table has no llm group"
    ):
        load_scenario("fishery/prompt_variants", ["params.llm_agents=0"])


def test_a_population_groups_llm_options_and_grid_axis_compose(tmp_path):
    from mesa_dilemmas.scenarios.config import load_scenario

    path = tmp_path / "s.toml"
    path.write_text(
        'game = "port_of_mars"\n'
        "[population]\ngroups = [\n"
        '  { llm = "local", count = 2, label = "warm", llm_options = { temperature = 0.2 } },\n'
        '  { rule = "rule", count = 3 },\n]\n'
        '[grid]\n"llm.prompt_variant" = [0, 4]\n'
    )
    scenario, _ = load_scenario(str(path))
    groups = [t["groups"] for t in scenario.grid["players"]]
    assert [g[0]["llm_options"] for g in groups] == [
        {"temperature": 0.2, "prompt_variant": 0},
        {"temperature": 0.2, "prompt_variant": 4},
    ]
    assert all("llm_options" not in g[1] for g in groups)  # rule players are not worded


def test_estimate_prices_k_variants_as_k_times_the_calls():
    from mesa_dilemmas.scenarios.config import load_scenario
    from mesa_dilemmas.scenarios.size import llm_estimate

    small = ["max_steps=2", "params.n_agents=2", "params.llm_agents=2"]
    five, _ = load_scenario("fishery/prompt_variants", small)
    one, _ = load_scenario("fishery/prompt_variants", [*small, "llm.prompt_variant=0"])
    calls = [sum(r.tally.calls for r in llm_estimate(s, rounds=2).rows) for s in (five, one)]
    assert calls[1] > 0 and calls[0] == 5 * calls[1]
