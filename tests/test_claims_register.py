"""The claims register (issue 35): every row of every register that exists has a verdict source
or a reason, every registered claim of a paper with a register is in one of its rows, ids are
unique, no row copies a paper's sentence, a malformed register fails with one line naming the
file, the row and the field, registers are found the way a third-party game's would be, and the
rendered register shows every row and the counts.  Papers whose register is not written yet are
skipped, not failed."""

from __future__ import annotations

import re
import sys
import textwrap
from pathlib import Path

import pytest

# the papers' word runs, shared with the whole-project check
from test_no_paper_sentences import paper_runs, shared_runs  # noqa: F401

from mesa_dilemmas.analysis import register as reg
from mesa_dilemmas.analysis.verdicts import Claim, Verdict
from mesa_dilemmas.dilemmas.registry import CLAIMS, extensions, load_extensions

PACKAGE = Path(reg.__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def modules():
    return load_extensions(CLAIMS)


@pytest.fixture(scope="module")
def registers(modules):
    return reg.load_registers(modules.values())


@pytest.fixture(scope="module")
def published(modules):
    """The verdict keys ``reproduce --strategies`` gives: what the paper says of each model's
    self-play (``PUBLISHED`` of each C/D game's claims module) and each game's evolution."""
    from mesa_dilemmas.dilemmas.binary.paper002 import MODEL_NAMES, judge_evolution

    keys: set[str] = set()
    for game, m in modules.items():
        pub = getattr(m, "PUBLISHED", None)
        if pub is None:
            continue
        keys.add(reg.published_key(judge_evolution.__name__.removeprefix("judge_"), game))
        if hasattr(pub, "judge"):  # one judge for every model (before issue 35)
            per_model = {stem: [pub] for stem in MODEL_NAMES}
        else:  # what the paper says of each model, each with its judge
            per_model = pub.per_model
        for stem, stated in per_model.items():
            for said in stated:
                keys.add(reg.published_key(said.judge.__name__.removeprefix("judge_"), game, stem))
    assert keys
    return keys


def registered_claims(modules) -> list[Claim]:
    return [c for m in modules.values() for c in getattr(m, "CLAIMS", [])]


def test_the_registers_of_papers_002_and_003_are_found_through_the_claims_entry_points(
    modules, registers
):
    assert set(extensions(CLAIMS)) == set(modules)
    papers = {r.paper: r.path.relative_to(PACKAGE).as_posix() for r in registers}
    assert papers["002"] == "dilemmas/binary/claims_register.toml"  # found from the C/D games
    assert papers["003"] == "dilemmas/fishery/claims_register.toml"
    assert len({r.path for r in registers}) == len(registers)  # each file once
    # paper 001's register is written separately; when it exists it is found the same way,
    # until then its module's REGISTER names a missing file, which is left out
    if "001" in papers:
        assert papers["001"].startswith("dilemmas/")
    for missing in reg.missing_registers(modules.values()):
        assert "binary" not in missing and "fishery" not in missing


def test_every_judged_row_names_keys_that_a_reproduce_path_judges(modules, registers, published):
    known = {c.key for c in registered_claims(modules)} | {reg.base_key(k) for k in published}
    assert reg.problems(registers, known) == []
    judged = [row for _, row in reg.rows(registers) if row.kind == "judged"]
    assert judged
    for row in judged:
        assert row.claims and row.test, row.id
        for key in row.claims:
            if "@" in key:  # judged on the published sets only: the row says so
                assert key in published, f"{row.id}: {key} is no verdict of --strategies"
                assert "--strategies" in row.test, f"{row.id}: {key} needs --strategies"
            else:
                assert key in known, f"{row.id}: {key}"


def test_every_llm_row_names_a_bundled_scenario_that_seats_each_of_its_models(registers):
    from mesa_dilemmas.dilemmas import game_model
    from mesa_dilemmas.llm.specs import parse_spec
    from mesa_dilemmas.scenarios.config import load_scenario

    llm_rows = [row for _, row in reg.rows(registers) if row.kind == "llm"]
    assert llm_rows
    loaded: dict[tuple[str, str], set[str]] = {}
    for row in llm_rows:
        assert row.models and row.test, row.id
        for model in row.models:
            assert parse_spec(model).provider != "local", f"{row.id}: {model}"
            key = (row.scenario, model)
            if key not in loaded:
                scenario, _ = load_scenario(row.scenario, row.estimate_overrides(model))
                first = {k: v[0] for k, v in scenario.grid.items()}
                loaded[key] = game_model(scenario.game).llm_specs({**scenario.params, **first})
            assert model in loaded[key], f"{row.id}: {row.scenario} does not seat {model}"
    assert {(p.scenario, p.model) for p in reg.priced_runs(registers)} == set(loaded)


def test_untestable_and_not_run_rows_say_why_and_not_run_rows_say_what_would_judge_them(
    registers,
):
    for _, row in reg.rows(registers):
        if row.kind in ("untestable", "not_run"):
            assert len(row.reason.split()) >= 4, row.id
        if row.kind == "not_run":
            assert len(row.test.split()) >= 4, row.id


def test_every_registered_claim_of_a_paper_with_a_register_is_in_a_row(
    modules, registers, published
):
    papers = {r.paper for r in registers}
    assert {"002", "003"} <= papers
    named = {reg.base_key(k) for _, row in reg.rows(registers) for k in row.claims}
    qualified = {k for _, row in reg.rows(registers) for k in row.claims}
    claims = [c for c in registered_claims(modules) if c.paper in papers]
    assert claims
    missing = sorted({c.key for c in claims} - named)
    assert not missing, f"registered claims in no register row: {missing}"
    unlisted = sorted(published - qualified)  # every verdict of --strategies has its row
    assert not unlisted, f"published-set verdicts in no register row: {unlisted}"
    for m in modules.values():
        for c in getattr(m, "LLM_CLAIMS", []):
            if c.paper not in papers:
                continue
            figures = set(re.findall(r"(?:Fig\.|Table) \d+", c.where))
            rows = [
                row
                for paper, row in reg.rows(registers, c.paper)
                if row.kind == "llm"
                and row.scenario == c.scenario
                and figures <= set(re.findall(r"(?:Fig\.|Table) \d+", row.where))
            ]
            assert rows, f"LLM claim {c.where}: {c.statement[:60]} is in no llm row"


def test_ids_are_unique_and_counts_add_up(registers):
    ids = [row.id for _, row in reg.rows(registers)]
    assert len(ids) == len(set(ids))
    found = reg.counts(registers)
    assert set(found) == {r.paper for r in registers}
    for paper, by_kind in found.items():
        assert set(by_kind) == set(reg.KINDS)
        assert sum(by_kind.values()) == len(reg.rows(registers, paper))
    # a referee's count: each paper states a few dozen separate findings
    assert 25 <= sum(found["002"].values()) <= 45
    assert 25 <= sum(found["003"].values()) <= 45


def test_no_row_copies_a_sentence_of_a_paper(registers, paper_runs):  # noqa: F811
    hits = []
    for _, row in reg.rows(registers):
        for field in ("says", "range", "test", "reason", "note"):
            hits += [f"{row.id}.{field}: {h}" for h in shared_runs(getattr(row, field), paper_runs)]
    assert not hits, "\n".join(hits)
    # the check is live: a row quoting the paper is caught
    quoted = " ".join(next(iter(paper_runs)))
    assert shared_runs(f"As the paper says: {quoted}.", paper_runs)


# -- a malformed register ---------------------------------------------------------------------

GOOD_ROW = """
[[claim]]
id = "999-a"
where = "Fig. 1"
says = "Something rises."
range = "n = 4"
kind = "untestable"
reason = "the paper gives no numbers at all"
"""


def write(tmp_path: Path, body: str, name: str = "claims_register.toml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ('paper = "999"\n' + GOOD_ROW.replace('reason = "the paper gives no numbers at all"', ""),
         "claim 1 (999-a): reason:"),
        ('paper = "999"\n' + GOOD_ROW.replace('kind = "untestable"', 'kind = "judged"'),
         "claim 1 (999-a): claims:"),
        ('paper = "999"\n' + GOOD_ROW.replace('kind = "untestable"', 'kind = "maybe"'),
         "claim 1 (999-a): kind:"),
        ('paper = "999"\n' + GOOD_ROW + 'colour = "red"\n', "claim 1 (999-a): colour: unknown field"),
        ('paper = "999"\n' + GOOD_ROW.replace('says = "Something rises."\n', ""),
         "claim 1 (999-a): says:"),
        ('paper = "999"\n' + GOOD_ROW + GOOD_ROW, "claim 2 (999-a): id: already used by claim 1"),
        ('paper = "999"\n' + GOOD_ROW.replace('kind = "untestable"', 'kind = "llm"')
         + 'scenario = "x/y"\nmodels = ["gpt-4o"]\ntest = "run it"\n',
         "claim 1 (999-a): models: 'gpt-4o' is not provider:model"),
        ('paper = "999"\n' + GOOD_ROW.replace('kind = "untestable"', 'kind = "llm"')
         + 'models = ["openai:gpt-4o"]\ntest = "run it"\n', "claim 1 (999-a): scenario:"),
        ('paper = "999"\n' + GOOD_ROW.replace('kind = "untestable"', 'kind = "not_run"'),
         "claim 1 (999-a): test:"),
        (GOOD_ROW, "paper: missing"),
        ('paper = "999"\nclaim = 3\n', "claim: must be an array of tables"),
        ('paper = "999"\n[[claim]\n', "not valid TOML"),
    ],
)  # fmt: skip
def test_a_malformed_register_fails_with_one_line_naming_file_row_and_field(
    tmp_path, body, expected
):
    path = write(tmp_path, body)
    with pytest.raises(reg.RegisterError) as info:
        reg.load_register(path)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"{path}: ")
    assert expected in message


def test_the_same_id_in_two_registers_is_refused(tmp_path):
    a = write(tmp_path, 'paper = "998"\n' + GOOD_ROW, "a.toml")
    b = write(tmp_path, 'paper = "999"\n' + GOOD_ROW, "b.toml")
    pkg = tmp_path / "twopapers"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "claims.py").write_text(f"REGISTER = [{str(a)!r}, {str(b)!r}]\n")
    sys.path.insert(0, str(tmp_path))
    try:
        import twopapers.claims as module

        with pytest.raises(reg.RegisterError, match=r"999-a: id: already used in .*a\.toml"):
            reg.load_registers([module])
    finally:
        sys.path.remove(str(tmp_path))
        for name in [n for n in sys.modules if n.startswith("twopapers")]:
            del sys.modules[name]


# -- how registers are found ------------------------------------------------------------------


def test_a_third_party_games_register_is_found_beside_its_module_its_library_or_its_register(
    tmp_path, monkeypatch
):
    """A package ``thirdparty`` with a family library (``shared``, holding the register) whose
    two games' claims modules import a helper from it, and a game that names its register."""
    root = tmp_path / "thirdparty"
    for folder in ("shared", "game_a", "game_b", "game_c", "game_c/data"):
        (root / folder).mkdir(parents=True)
        (root / folder / "__init__.py").write_text("")
    (root / "__init__.py").write_text("")
    (root / "shared" / "helpers.py").write_text("def experiment():\n    return 1\n")
    write(root / "shared", 'paper = "901"\n' + GOOD_ROW.replace("999-a", "901-a"))
    for game in ("game_a", "game_b"):
        (root / game / "claims.py").write_text("from thirdparty.shared.helpers import experiment\n")
    write(root / "game_b", 'paper = "902"\n' + GOOD_ROW.replace("999-a", "902-a"))
    (root / "game_c" / "claims.py").write_text('REGISTER = "data/mine.toml"\n')
    write(
        root / "game_c" / "data",
        'paper = "903"\n' + GOOD_ROW.replace("999-a", "903-a"),
        "mine.toml",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    import importlib

    mods = [
        importlib.import_module(f"thirdparty.{g}.claims") for g in ("game_a", "game_b", "game_c")
    ]
    try:
        paths = reg.register_paths(mods)
        assert [p.relative_to(root).as_posix() for p in paths] == [
            "shared/claims_register.toml",  # from game_a's import, once though game_b shares it
            "game_b/claims_register.toml",
            "game_c/data/mine.toml",
        ]
        assert [r.paper for r in reg.load_registers(mods)] == ["901", "902", "903"]
        (root / "game_c" / "claims.py").write_text('REGISTER = "data/missing.toml"\n')
        mods[2] = importlib.reload(mods[2])
        # a register not written yet is left out (and listed), or refused when strict
        assert [p.relative_to(root).as_posix() for p in reg.register_paths(mods)][-1] == (
            "game_b/claims_register.toml"
        )
        assert reg.missing_registers(mods) == [
            f"thirdparty.game_c.claims: {root / 'game_c' / 'data' / 'missing.toml'}"
        ]
        with pytest.raises(reg.RegisterError, match=r"thirdparty.game_c.claims: REGISTER: "):
            reg.register_paths(mods, strict=True)
    finally:
        for name in [n for n in sys.modules if n.startswith("thirdparty")]:
            del sys.modules[name]


# -- rendering --------------------------------------------------------------------------------


def judge_rises(run_dir: Path) -> Verdict:  # a registered claim's judge, for the key only
    raise AssertionError("not called")


def judge_tuned(run_dir: Path) -> Verdict:
    raise AssertionError("not called")


def test_the_rendered_register_shows_every_row_its_verdicts_prices_reasons_and_the_counts(
    tmp_path,
):
    path = write(
        tmp_path,
        """
        paper = "999"
        title = "A paper"

        [[claim]]
        id = "999-judged"
        where = "Fig. 2"
        says = "More cooperation, more welfare."
        range = "n = 4 to 64"
        kind = "judged"
        claims = ["rises", "tuned", "rises@model-x", "absent"]
        test = "Spearman per group size"
        note = "only the reference sets"

        [[claim]]
        id = "999-llm"
        where = "Fig. 3"
        says = "LLM players do | something."
        range = "10 trials"
        kind = "llm"
        scenario = "my_game/llm"
        models = ["openai:gpt-4o", "anthropic:claude-sonnet-4-20250514"]
        test = "survival per model"

        [[claim]]
        id = "999-untestable"
        where = "App. C"
        says = "One run shows a thing."
        range = "one run"
        kind = "untestable"
        reason = "a single illustrative run"

        [[claim]]
        id = "999-not-run"
        where = "Table 2"
        says = "Generations are many."
        range = "100 runs"
        kind = "not_run"
        test = "count the generations"
        reason = "no judge reads them yet"
        """,
    )
    register = reg.load_register(path)
    claims = {
        "rises": Claim("999", "Fig. 2", "rises", "e", judge_rises),
        "tuned": Claim("999", "Fig. 2", "tuned", "e", judge_tuned, by_construction=("bias 1.4",)),
    }
    verdicts = {
        "rises": Verdict("rho = 0.9", "Spearman", "reproduced"),
        "tuned": Verdict("HI > EI", "Kendall", "reproduced"),
        "rises@model-x": Verdict("rho = -0.1", "Spearman", "not reproduced"),
    }
    prices = {("my_game/llm", "openai:gpt-4o"): "about $12.00 at list prices"}
    text = "\n".join(
        reg.render_register([register], verdicts, prices, claims, missing=["x.claims: y.toml"])
    )
    assert "Not written yet: x.claims: y.toml." in text
    assert "paper 999: 1 judged here, 1 need LLMs, 1 not testable here, 1 not run here" in text
    assert "| 999 | 1 | 1 | 1 | 1 | 4 |" in text
    assert "### Paper 999 register: A paper" in text
    for row in register.rows:
        assert f"| {row.id} |" in text
    assert "`rises`: **reproduced** (rho = 0.9)" in text
    assert (
        "`tuned`: **by construction** (encoded by bias 1.4), never counted as reproduced; "
        "the judge alone: reproduced" in text
    )
    assert "`rises@model-x`: **not reproduced**" in text
    assert "`absent`: not run in this mode" in text
    assert "openai:gpt-4o: about $12.00 at list prices" in text
    assert "anthropic:claude-sonnet-4-20250514: not priced in this mode" in text
    assert "a single illustrative run" in text and "no judge reads them yet" in text
    assert "LLM players do \\| something." in text  # a cell's bar does not break the table
    table_rows = [ln for ln in text.splitlines() if ln.startswith("| 999-")]
    assert len(table_rows) == 4 and all(ln.count(" | ") == 7 for ln in table_rows)


def test_the_real_registers_render_every_row_with_no_verdicts_yet(registers):
    text = "\n".join(reg.render_register(registers, {}, {}))
    assert reg.intro_line(registers) in text
    for _, row in reg.rows(registers):
        assert f"| {row.id} |" in text
    assert "not run in this mode" in text and "not priced in this mode" in text
