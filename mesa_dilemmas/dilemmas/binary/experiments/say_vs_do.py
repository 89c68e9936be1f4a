"""Say vs do: does an LLM play the move a C/D strategy's code plays, round by round?

For a strategy S, a C/D game G at n players and M opponent trajectories:

1. **Trajectories.**  Trajectory m is a match of n reference strategies drawn from a seeded mix
   (:data:`OPPONENT_MIX`); the actions of seats 1..n-1 are kept as scripted opponents.  Every
   strategy meets the same M trajectories (same seed), so strategies are compared on the same
   opponents; the opponents do not react to S (their play is fixed in advance), which is what
   keeps the paths of the code and of the LLM identical.
2. **The code.**  S plays seat 0 against those scripted opponents through the family's engine
   (:func:`~mesa_dilemmas.dilemmas.binary.game.play_batch`: reference strategies in process,
   file strategies in the sandbox), which gives its action a_t in every round and the full
   history (payoffs, stock) its actions lead to.  It is played again with other generator
   seeds: S is *deterministic* on these histories when its answers are the same and it never
   drew a random number.
3. **The LLM, from the description.**  For every round t: system = the game's rules, this
   match's parameters and S's description; user = the history of rounds 1..t-1 *with S's own
   past actions as the code played them* (so the paths never diverge), then "which action in
   round t".  One C/D decision through the LLM layer (cache, run record, budget, answer modes).
4. **The LLM, tracing the code.**  The same, with S's code (and how it is built and called) in
   place of the description: "what does ``act(history)`` return in round t".
5. **Agreement.**  The share of rounds where the LLM's answer is the code's, with a Wilson 95%
   interval, per strategy and mode; a decision that fell back (no valid answer after the
   re-asks) counts as a disagreement and is counted apart.  For a stochastic strategy the
   per-round match is not a fair test (the code's own move is one draw); its row is flagged
   and its cooperation rate is shown beside the LLM's (a comparison in distribution only);
   the overall row pools the deterministic strategies only.

Every call goes through the LLM layer's client, so a rerun answers from the response cache and
pays no provider call.  Command line: ``mesa-dilemmas strategies say-vs-do``.
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import inspect
import json
import math
import sys
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from mesa_dilemmas.agents.policy import Policy
    from mesa_dilemmas.dilemmas.binary.rules import BinaryGame
    from mesa_dilemmas.dilemmas.binary.strategies.loader import StrategyEntry

PROMPTS = Path(__file__).resolve().parent.parent / "prompts" / "say_vs_do.toml"
MODES = ("description", "code")
KIND = {"description": "say_vs_do.description", "code": "say_vs_do.code"}

#: the opponents' mix: trajectories are matches of these, seeded
OPPONENT_MIX = ("all_c", "all_d", "rnd(0.5)", "tft(0.5)", "grim(0.25)", "ptft", "cd(1)")

#: ``--set reference``: the reference strategies measured (the last three draw random numbers)
REFERENCE_SET = (
    "all_c",
    "all_d",
    "cc(1)",
    "cd(1)",
    "tft(0.5)",
    "tft_endgame(0.5, 2)",
    "grim(0.34)",
    "threshold",
    "rnd(0.5)",
    "ptft",
    "gtft(0.5, 0.2)",
)

#: limits that keep every decision's sample id (strategy, trajectory, round) distinct
MAX_ROUNDS = 999
MAX_TRAJECTORIES = 9_999

#: seeds of the extra plays that test whether the code is deterministic on these histories
DETERMINISM_PLAYS = 3


@cache
def _prompts() -> dict[str, Any]:
    return tomllib.loads(PROMPTS.read_text())


def register() -> None:
    """Register the two decision kinds' templates with the LLM layer (idempotent)."""
    from mesa_dilemmas.llm.prompts import Template, register_template

    for mode in MODES:
        table = _prompts()[mode]
        register_template(KIND[mode], Template.from_table(table, str(PROMPTS)))


def wilson(k: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """The Wilson score interval of k successes in n trials ((nan, nan) when n == 0)."""
    if n == 0:
        return math.nan, math.nan
    p = k / n
    centre = p + z * z / (2 * n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    denom = 1 + z * z / n
    return max(0.0, (centre - half) / denom), min(1.0, (centre + half) / denom)


# -- the strategies ----------------------------------------------------------------------------


def strategy_entries(ref: str, select: Sequence[str] = ()) -> list[StrategyEntry]:
    """``reference`` (the specs in ``select``, else :data:`REFERENCE_SET`) or a strategy set by
    name or path (the strategies named in ``select``, else all)."""
    from mesa_dilemmas.dilemmas.binary.strategies.loader import StrategyEntry, load_strategy_set

    if ref == "reference":
        return [StrategyEntry.reference(s) for s in (select or REFERENCE_SET)]
    found = load_strategy_set(ref)
    if not select:
        return list(found)
    return [found.get(name) for name in select]


def _resolved_params(entry: StrategyEntry) -> dict[str, Any]:
    """A trusted entry's constructor parameters, defaults filled in."""
    if entry.cls is None:
        return dict(entry.params)
    out = {}
    for p in inspect.signature(entry.cls.__init__).parameters.values():
        if p.name in ("self", "game") or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if p.default is not inspect.Parameter.empty:
            out[p.name] = p.default
    out.update(entry.params)
    return out


def describe_entry(entry: StrategyEntry) -> str:
    """What the description-mode prompt says about the strategy: its description (and the
    values of its parameters, for a reference strategy with any)."""
    text = (entry.description or "").strip() or "(no description was recorded)"
    params = _resolved_params(entry) if entry.cls is not None else {}
    if params:
        text += "\nIts parameters: " + ", ".join(f"{k} = {v!r}" for k, v in params.items()) + "."
    return text


def code_of(entry: StrategyEntry) -> tuple[str, str]:
    """(source code, how the class is built) of a strategy: a file strategy's module as written;
    a reference strategy's class and its bases up to ``Strategy``, with the helpers they call."""
    if entry.cls is None:
        from mesa_dilemmas.dilemmas.binary.strategies.loader import read_limited

        source = read_limited(Path(entry.module or ""), "strategy module")
        args = "".join(f", {k}={v!r}" for k, v in entry.params.items())
        return source.rstrip() + "\n", f"`strategy = {entry.class_name}(game{args})`"
    from mesa_dilemmas.dilemmas.binary.strategies import reference
    from mesa_dilemmas.dilemmas.binary.strategies.base import Strategy

    chain = [
        c for c in reversed(entry.cls.__mro__) if issubclass(c, Strategy) and c is not Strategy
    ]
    parts = []
    if "_opponents_needed(" in "".join(inspect.getsource(c) for c in chain):
        parts.append(inspect.getsource(reference._opponents_needed))
    for cls in chain:
        source = inspect.getsource(cls)
        # the vectorised form is an engine optimisation with the same answers: not shown
        source = source.split("    vector_form =", 1)[0].rstrip() + "\n"
        parts.append(source)
    header = (
        "import math\n\n"
        "from mesa_dilemmas.dilemmas.binary.strategies.base import GameDescription, Strategy\n"
        "from mesa_dilemmas.dilemmas.binary.strategies.history import PlayerHistory\n\n"
        "C, D = 'C', 'D'\n\n"
    )
    args = "".join(f", {k}={v!r}" for k, v in entry.params.items())
    return header + "\n\n".join(p.rstrip() for p in parts) + "\n", (
        f"`strategy = {entry.cls.__name__}(game{args})`"
    )


# -- trajectories and the code's play ----------------------------------------------------------


def make_rules(game: str, n: int, rounds: int) -> BinaryGame:
    from mesa_dilemmas.dilemmas.binary.rules import make_game, rules_of

    return make_game(game, n, rounds, **rules_of(game).example_params(n))


def opponent_trajectories(rules: BinaryGame, m: int, seed: int) -> np.ndarray:
    """(m, n, rounds) int8: matches of the seeded opponent mix; seat 0's row is not used."""
    from mesa_dilemmas.dilemmas.binary.game import play_batch
    from mesa_dilemmas.dilemmas.binary.strategies.loader import StrategyEntry

    rng = np.random.default_rng([seed, 7])
    mix = [StrategyEntry.reference(s) for s in OPPONENT_MIX]
    lineups = [[mix[j] for j in rng.integers(0, len(mix), rules.n_players)] for _ in range(m)]
    entropies = [int(e) for e in rng.integers(0, 2**63, size=m)]
    result = play_batch(rules, lineups, entropies, keep_history=True)
    assert result.store is not None
    return np.array(result.store.actions, dtype=np.int8)


@dataclass
class CodePlay:
    """The code's play against the trajectories, and whether it is deterministic on them."""

    actions: np.ndarray  # (m, rounds) bool
    cooperated: np.ndarray  # (m, n, rounds) bool: every seat
    payoffs: np.ndarray  # (m, rounds) seat 0's payoffs
    stock: np.ndarray | None  # (m, rounds + 1)
    deterministic: bool
    flags: list[str] = field(default_factory=list)


def play_code(entry: StrategyEntry, rules: BinaryGame, scripted: np.ndarray, seed: int) -> CodePlay:
    """Seat 0 = ``entry`` against the scripted seats (in the sandbox for file strategies)."""
    from mesa_dilemmas.dilemmas.binary.game import play_batch

    m, n = scripted.shape[:2]
    lineups = [[entry] + [None] * (n - 1) for _ in range(m)]
    rng = np.random.default_rng([seed, 11])
    plays = []
    flags: list[str] = []
    deterministic = True
    for k in range(1 + DETERMINISM_PLAYS):
        entropies = [int(e) for e in rng.integers(0, 2**63, size=m)]
        result = play_batch(rules, lineups, entropies, scripted=scripted, keep_history=True)
        assert result.store is not None and result.used_rng is not None
        if k == 0:
            flags = sorted({f.reason for f in result.flags})
            first = result
        if result.flags or bool(result.used_rng[:, 0].any()):
            deterministic = False
        plays.append(np.array(result.store.actions[:, 0, :]))
    deterministic = deterministic and all(np.array_equal(plays[0], p) for p in plays[1:])
    store = first.store
    assert store is not None
    return CodePlay(
        actions=plays[0].astype(bool),
        cooperated=np.array(store.actions, dtype=bool),
        payoffs=np.array(store.payoffs[:, 0, :]),
        stock=None if store.stock is None else np.array(store.stock),
        deterministic=deterministic,
        flags=flags,
    )


# -- prompts -----------------------------------------------------------------------------------


def _num(x: float) -> str:
    return f"{x:.2f}"


def render_history(play: CodePlay, m: int, t: int, n_rounds: int) -> tuple[str, str]:
    """(the rounds before round t + 1, the line about round t + 1) of trajectory m."""
    h = _prompts()["history"]
    acts = play.cooperated[m]  # (n, rounds)
    n = acts.shape[0]
    lines = []
    for s in range(t):
        others = ", ".join("C" if a else "D" for a in acts[1:, s])
        line = h["round"].format(
            round=s + 1,
            mine="C" if acts[0, s] else "D",
            others=others,
            opp=int(acts[1:, s].sum()),
            n_opp=n - 1,
            payoff=_num(float(play.payoffs[m, s])),
        )
        if play.stock is not None:
            line += h["stock"].format(stock=_num(float(play.stock[m, s])))
        lines.append(line)
    now = h["now"].format(round=t + 1, n_rounds=n_rounds, left=n_rounds - t)
    if play.stock is not None:
        now += h["now_stock"].format(stock=_num(float(play.stock[m, t])))
    return ("\n".join(lines) if lines else h["none"]), now


def match_params(rules: BinaryGame) -> str:
    values = rules.description().as_dict()
    values.pop("game", None)
    return ", ".join(f"{k} = {v}" for k, v in values.items())


# -- the LLM's answers -------------------------------------------------------------------------


@dataclass
class Row:
    """One strategy's result."""

    strategy: str
    rounds: int
    deterministic: bool
    code_coop: float
    agree: dict[str, int] = field(default_factory=dict)
    fallbacks: dict[str, int] = field(default_factory=dict)
    llm_coop: dict[str, float] = field(default_factory=dict)
    code_flags: list[str] = field(default_factory=list)

    def as_dict(self, modes: Sequence[str]) -> dict[str, Any]:
        out: dict[str, Any] = {
            "strategy": self.strategy,
            "rounds": self.rounds,
            "deterministic": self.deterministic,
            "code_coop_rate": round(self.code_coop, 4),
        }
        for mode in modes:
            k = self.agree.get(mode, 0)
            lo, hi = wilson(k, self.rounds)
            out[f"agree_{mode}"] = round(k / self.rounds, 4) if self.rounds else math.nan
            out[f"agree_{mode}_lo"] = round(lo, 4)
            out[f"agree_{mode}_hi"] = round(hi, 4)
            out[f"llm_coop_{mode}"] = round(self.llm_coop.get(mode, math.nan), 4)
            out[f"fallbacks_{mode}"] = self.fallbacks.get(mode, 0)
        out["code_flags"] = "; ".join(self.code_flags)
        return out


async def _ask_all(
    policy: Policy,
    entry: StrategyEntry,
    index: int,
    rules: BinaryGame,
    play: CodePlay,
    modes: Sequence[str],
    seed: int,
) -> dict[str, list[tuple[int, int, str | None, bool]]]:
    """mode -> (trajectory, round, the LLM's answer, fell back?) for every round."""
    from mesa_dilemmas.agents.decisions import Decision
    from mesa_dilemmas.dilemmas.binary.prompts import game_rules
    from mesa_dilemmas.dilemmas.binary.rules import ACTION_SPEC

    m_count, n_rounds = play.actions.shape
    rules_text = game_rules(rules.NAME)
    params = match_params(rules)
    code, build = code_of(entry) if "code" in modes else ("", "")
    strategy = describe_entry(entry)
    jobs = []
    keys = []
    for mode in modes:
        for m in range(m_count):
            for t in range(n_rounds):
                history, now = render_history(play, m, t, n_rounds)
                obs = {
                    "rules": rules_text,
                    "params": params,
                    "strategy": strategy,
                    "code": code.rstrip(),
                    "build": build,
                    "history": history,
                    "now": now,
                }
                decision = Decision(
                    kind=KIND[mode],
                    spec=ACTION_SPEC,
                    observation=obs,
                    # the sample id: (seed, strategy, trajectory, round), one per decision
                    step=(index * 10_000 + m) * 1_000 + t,
                    fallback=None,
                    meta={"run_seed": seed},
                )
                jobs.append(policy.adecide(decision))
                keys.append((mode, m, t))
    answers = await asyncio.gather(*jobs)
    out: dict[str, list[tuple[int, int, str | None, bool]]] = {mode: [] for mode in modes}
    for (mode, m, t), answer in zip(keys, answers, strict=True):
        value = None if answer.fell_back else answer.value
        out[mode].append((m, t, None if value is None else str(value).upper(), answer.fell_back))
    return out


@dataclass
class Study:
    game: str
    n: int
    rounds: int
    trajectories: int
    modes: tuple[str, ...]
    seed: int = 0


def run_study(
    study: Study, entries: Sequence[StrategyEntry], policy: Policy
) -> tuple[list[Row], list[dict[str, Any]]]:
    """Every strategy's row and every round's detail."""
    register()
    rules = make_rules(study.game, study.n, study.rounds)
    scripted = opponent_trajectories(rules, study.trajectories, study.seed)
    rows: list[Row] = []
    detail: list[dict[str, Any]] = []
    for index, entry in enumerate(entries):
        play = play_code(entry, rules, scripted, study.seed)
        answers = asyncio.run(_ask_all(policy, entry, index, rules, play, study.modes, study.seed))
        total = int(play.actions.size)
        row = Row(
            strategy=entry.label if entry.spec else entry.name,
            rounds=total,
            deterministic=play.deterministic,
            code_coop=float(play.actions.mean()) if total else math.nan,
            code_flags=play.flags,
        )
        per_round: dict[tuple[int, int], dict[str, Any]] = {}
        for mode, items in answers.items():
            agree = fell = coop = 0
            for m, t, value, fell_back in items:
                code = "C" if play.actions[m, t] else "D"
                agree += value == code
                fell += fell_back
                coop += value == "C"
                rec = per_round.setdefault(
                    (m, t),
                    {"strategy": row.strategy, "trajectory": m, "round": t + 1, "code": code},
                )
                rec[mode] = value or ""
                rec[f"{mode}_fell_back"] = fell_back
            row.agree[mode], row.fallbacks[mode] = agree, fell
            row.llm_coop[mode] = coop / total if total else math.nan
        rows.append(row)
        detail.extend(per_round[k] for k in sorted(per_round))
    return rows, detail


def overall(rows: Sequence[Row], modes: Sequence[str]) -> dict[str, Any]:
    """The deterministic strategies pooled (stochastic ones are compared in distribution only)."""
    det = [r for r in rows if r.deterministic]
    pooled = Row(
        strategy="overall (deterministic)",
        rounds=sum(r.rounds for r in det),
        deterministic=True,
        code_coop=(
            sum(r.code_coop * r.rounds for r in det) / sum(r.rounds for r in det)
            if det
            else math.nan
        ),
    )
    for mode in modes:
        pooled.agree[mode] = sum(r.agree.get(mode, 0) for r in det)
        pooled.fallbacks[mode] = sum(r.fallbacks.get(mode, 0) for r in det)
        pooled.llm_coop[mode] = (
            sum(r.llm_coop[mode] * r.rounds for r in det) / pooled.rounds
            if pooled.rounds
            else math.nan
        )
    return pooled.as_dict(modes)


def _pct(x: float) -> str:
    return "n/a" if x != x else f"{100 * x:.0f}%"


def markdown(study: Study, label: str, table: Sequence[dict[str, Any]], llm: dict[str, Any]) -> str:
    modes = study.modes
    head = ["strategy", "rounds", "deterministic"]
    for mode in modes:
        head += [f"agree ({mode})", "95% CI", "fallbacks"]
    head += ["C-rate code", *[f"C-rate LLM ({mode})" for mode in modes]]
    lines = [
        f"# Say vs do: {study.game}, n = {study.n}, {study.rounds} rounds, "
        f"{study.trajectories} trajectories, {label}",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    for r in table:
        cells = [str(r["strategy"]), str(r["rounds"]), "yes" if r["deterministic"] else "no"]
        for mode in modes:
            cells += [
                _pct(r[f"agree_{mode}"]),
                f"{_pct(r[f'agree_{mode}_lo'])}-{_pct(r[f'agree_{mode}_hi'])}",
                str(r[f"fallbacks_{mode}"]),
            ]
        cells += [_pct(r["code_coop_rate"]), *[_pct(r[f"llm_coop_{mode}"]) for mode in modes]]
        lines.append("| " + " | ".join(cells) + " |")
    lines += [
        "",
        "Agreement: share of rounds where the LLM chose the code's action (a fallback counts as "
        "a disagreement). Rows marked not deterministic drew random numbers or answered "
        "differently under other seeds: compare their C-rates, not their agreement; the overall "
        "row pools the deterministic strategies only.",
        "",
        f"LLM calls: {llm.get('calls', 0)} ({llm.get('provider_calls', 0)} paid to the provider, "
        f"{llm.get('cache_hits', 0)} from the cache).",
    ]
    return "\n".join(lines) + "\n"


def write_outputs(
    out: Path,
    study: Study,
    label: str,
    rows: Sequence[Row],
    detail: Sequence[dict[str, Any]],
    llm: dict[str, Any],
) -> list[dict[str, Any]]:
    table = [r.as_dict(study.modes) for r in rows] + [overall(rows, study.modes)]
    out.mkdir(parents=True, exist_ok=True)
    with (out / "say_vs_do.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(table[0]))
        writer.writeheader()
        writer.writerows(table)
    if detail:
        with (out / "say_vs_do_rounds.csv").open("w", newline="") as f:
            names = list(dict.fromkeys(k for d in detail for k in d))
            writer = csv.DictWriter(f, fieldnames=names)
            writer.writeheader()
            writer.writerows(detail)
    (out / "say_vs_do.md").write_text(markdown(study, label, table, llm))
    summary = {
        "game": study.game,
        "n_players": study.n,
        "rounds": study.rounds,
        "trajectories": study.trajectories,
        "modes": list(study.modes),
        "seed": study.seed,
        "llm": label,
        "opponent_mix": list(OPPONENT_MIX),
        "table": table,
        "calls": {k: llm.get(k) for k in ("calls", "provider_calls", "cache_hits", "cost_usd")},
    }
    (out / "say_vs_do.json").write_text(json.dumps(summary, indent=2, default=str))
    return table


def llm_policy(spec: str) -> Policy:
    """The LLM seat that answers the questions, built as a population's ``llm`` group is (the
    policy kind registered by the LLM layer), with the active run's settings."""
    from mesa_dilemmas.agents.persona import Persona
    from mesa_dilemmas.agents.population import Group, policy_kind

    return policy_kind("llm")(spec, group=Group(llm=spec), model=None, seat=0, persona=Persona())


# -- command line --------------------------------------------------------------------------------


def _fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 2


def cmd_say_vs_do(args: argparse.Namespace) -> int:
    from mesa_dilemmas import llm
    from mesa_dilemmas.dilemmas.binary.rules import binary_games
    from mesa_dilemmas.llm import session

    if args.game not in binary_games():
        return _fail(f"--game: unknown game {args.game!r}; allowed: {', '.join(binary_games())}")
    for flag, value, low, high in (
        ("--rounds", args.rounds, 1, MAX_ROUNDS),
        ("--trajectories", args.trajectories, 1, MAX_TRAJECTORIES),
        ("-n", args.n, 2, 4096),
    ):
        if not low <= value <= high:
            return _fail(f"{flag}: must be between {low} and {high} (got {value})")
    modes = MODES if args.mode == "both" else (args.mode,)
    try:
        entries = strategy_entries(args.set, args.strategy or ())
    except (ValueError, KeyError, OSError) as exc:
        return _fail(f"--set/--strategy: {str(exc).splitlines()[0]}")
    if not entries:
        return _fail(f"--set {args.set}: no strategies")
    table: dict[str, Any] = {}
    if args.llm_settings:
        try:
            table = tomllib.loads(Path(args.llm_settings).read_text()).get("llm", {})
        except (OSError, tomllib.TOMLDecodeError) as exc:
            return _fail(f"--llm-settings {args.llm_settings}: {exc}")
    if args.answer_mode:
        table["answer_mode"] = args.answer_mode
    if args.max_tokens:
        table["max_tokens"] = args.max_tokens
    if args.max_calls is not None:
        table["budget"] = {**table.get("budget", {}), "max_calls": args.max_calls}
    if getattr(args, "estimate", False):
        table["dry_run"] = True  # every prompt rendered and counted, nothing sent
    try:
        settings = llm.LLMSettings.from_table(table)
        if not settings.dry_run:  # a dry run needs no key or model file
            llm.preflight([args.llm], settings)
    except (llm.LLMConfigError, ValueError) as exc:
        return _fail(f"--llm: {str(exc).splitlines()[0]}")
    study = Study(
        game=args.game,
        n=args.n,
        rounds=args.rounds,
        trajectories=args.trajectories,
        modes=tuple(modes),
        seed=args.seed,
    )
    if getattr(args, "estimate", False):
        return _estimate(study, entries, settings, args.llm)
    out = Path(args.out)
    session.start_run(settings, out)
    try:
        policy = llm_policy(args.llm)
    except (llm.LLMConfigError, ValueError) as exc:
        session.finish_run()
        return _fail(f"--llm: {str(exc).splitlines()[0]}")
    try:
        rows, detail = run_study(study, entries, policy)
    except (llm.BudgetExceeded, llm.ProviderRejected, llm.ProviderFailed, llm.ReplayMiss) as exc:
        session.finish_run()
        print(f"stopped: {exc}", file=sys.stderr)
        return 3
    accounting = session.finish_run()
    label = getattr(getattr(policy, "spec", None), "label", args.llm)
    if settings.dry_run:
        label += " (a dry run: random answers, nothing sent)"
    write_outputs(out, study, label, rows, detail, accounting)
    if not args.quiet:
        print((out / "say_vs_do.md").read_text(), end="")
    return 0


def _estimate(study: Study, entries: Sequence[StrategyEntry], settings: Any, spec: str) -> int:
    """``--estimate``: every decision of the study rendered in a dry run (no provider, no key),
    its tokens counted and priced with the LLM layer's estimate (replies assumed)."""
    import tempfile

    from mesa_dilemmas.llm import session
    from mesa_dilemmas.llm.accounting import load_calls
    from mesa_dilemmas.llm.estimate import format_table, price_rows, tally

    with session.use(None), tempfile.TemporaryDirectory(prefix="say-vs-do-estimate-") as tmp:
        run = session.start_run(settings, Path(tmp))
        try:
            run_study(study, entries, llm_policy(spec))
        finally:
            session.finish_run(run)
        calls = list(load_calls(Path(tmp)))
    rows = price_rows(tally(calls), settings)
    decisions = len(entries) * len(study.modes) * study.trajectories * study.rounds
    print(
        f"say-vs-do on {study.game}: {len(entries)} strategies x {len(study.modes)} mode(s) x "
        f"{study.trajectories} trajectories x {study.rounds} rounds = {decisions} decisions"
    )
    print(format_table(rows, "every prompt rendered dry; no corrective re-asks counted"))
    return 0
