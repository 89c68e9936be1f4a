"""Benchmark of the binary-action games: fast engine vs a straightforward per-agent Mesa loop.

Prints, for n = 4, 16, 64, 256:
  * strategy calls per second and games per second of the batch engine
    (``play_batch``) and of the baseline, and their ratio (the engine plays the
    reference strategies in their vectorised forms: its "calls" are seat-rounds);
then the wall time of one full self-play scenario and one cultural-evolution
run (measured on a fraction of the work and extrapolated where a full run would
be long -- the fraction is printed), for the engine and for the baseline, and
the speed-up of the engine's scenario with 2 processes.

Both sides play the same strategies (the two bundled reference sets, mixed:
deterministic and stochastic) with the same rules object and the same history
API, so the difference is the machinery only.

Then the engine's two paths side by side, in one run (A B A B, CPU seconds of this
process): A plays every seat with one Python call per strategy-round
(``engine.VECTOR_FORMS = False``), B plays the reference strategies in their vectorised
forms; the workloads are the game's self-play scenario at a fraction of its samples and
the first runs of its cultural-evolution scenario (its own seeds), and the full-size
times of both scenarios are projected from them.  The two paths' results are checked to
be identical.

The baseline is what a straightforward Mesa implementation looks like: a
``mesa.Model`` with one ``mesa.Agent`` per player; each round every agent
builds its history view from the model's action matrix (as the paper's
reference code does: own column, opponents' cooperation counted with a mask),
asks its strategy, and stores its action; the model then computes each
agent's payoff in a Python loop and a ``DataCollector`` records model and
agent reporters.

Usage:  python benchmarks/bench_binary.py [--quick] [--game public_goods] [--paths-only]
"""

from __future__ import annotations

import argparse
import math
import os
import resource
import statistics
import time
from pathlib import Path

import mesa
import numpy as np

from mesa_dilemmas.dilemmas.binary.game import play_batch
from mesa_dilemmas.dilemmas.binary.rules import BinaryGame, make_game
from mesa_dilemmas.dilemmas.binary.strategies import (
    ACTION_CODE,
    GameDescription,
    StrategyEntry,
    load_strategy_set,
)

SIZES = (4, 16, 64, 256)


# -- the baseline: a per-agent Mesa loop ------------------------------------------------------


class NaiveHistory:
    """The same attributes strategies read, built eagerly per agent per round."""

    def __init__(
        self,
        actions: np.ndarray,
        payoffs: np.ndarray,
        stocks: list[float] | None,
        t: int,
        me: int,
        n_rounds: int,
    ) -> None:
        n = actions.shape[1]
        mask = np.ones(n, dtype=bool)
        mask[me] = False
        self.me = me
        self.n_players = n
        self.n_rounds = n_rounds
        self.round_number = t
        self.actions = actions[:t]
        self.payoffs = payoffs[:t]
        self.my_actions = actions[:t, me]
        self.my_payoffs = payoffs[:t, me]
        self.opponent_actions = actions[:t][:, mask]
        self.opponent_cooperators = self.opponent_actions.sum(axis=1)
        self.cooperators = actions[:t].sum(axis=1)
        self.stocks = None if stocks is None else np.array(stocks)
        self.stock = None if stocks is None else stocks[-1]

    @property
    def rounds_left(self) -> int:
        return self.n_rounds - self.round_number

    @property
    def is_first_round(self) -> bool:
        return self.round_number == 0

    @property
    def is_last_round(self) -> bool:
        return self.round_number == self.n_rounds - 1

    @property
    def last_opponent_cooperators(self) -> int | None:
        return None if self.round_number == 0 else int(self.opponent_cooperators[-1])

    @property
    def last_my_action(self) -> bool | None:
        return None if self.round_number == 0 else bool(self.my_actions[-1])


class NaiveAgent(mesa.Agent):
    def __init__(self, model: NaiveModel, strategy, seat: int) -> None:
        super().__init__(model)
        self.strategy = strategy
        self.seat = seat
        self.action = False
        self.payoff = 0.0
        self.total = 0.0

    def step(self) -> None:
        m = self.model
        history = NaiveHistory(m.actions, m.payoffs, m.stocks, m.t, self.seat, m.rules.n_rounds)
        self.action = ACTION_CODE[self.strategy.act(history)]


class NaiveModel(mesa.Model):
    def __init__(self, rules: BinaryGame, lineup: list[StrategyEntry], entropy: int) -> None:
        super().__init__(rng=entropy)
        self.rules = rules
        n, r = rules.n_players, rules.n_rounds
        desc: GameDescription = rules.description()
        self.actions = np.zeros((r, n), dtype=bool)
        self.payoffs = np.zeros((r, n))
        state = rules.initial_state(1)
        self.state = state
        self.stocks = None if state is None else [float(state[0])]
        self.t = 0
        self.players = [
            NaiveAgent(self, e.create(desc, (entropy, (i,))), i) for i, e in enumerate(lineup)
        ]
        self.datacollector = mesa.DataCollector(
            model_reporters={"cooperation_rate": lambda m: float(m.actions[m.t - 1].mean())},
            agent_reporters={"payoff": "payoff", "action": "action"},
        )

    def step(self) -> None:
        self.agents.do("step")  # simultaneous: every agent reads the same history
        n = self.rules.n_players
        for agent in self.players:
            self.actions[self.t, agent.seat] = agent.action
        n_c = int(self.actions[self.t].sum())
        stock = None if self.stocks is None else self.stocks[-1]
        for agent in self.players:  # per-agent payoff arithmetic
            agent.payoff = _payoff(self.rules, agent.action, n_c, n, stock)
            agent.total += agent.payoff
            self.payoffs[self.t, agent.seat] = agent.payoff
        if self.stocks is not None:
            remaining = stock * n_c / (2 * n)
            cap, g = self.rules.capacity, self.rules.growth
            self.stocks.append(min(remaining + g * remaining * (1 - remaining / cap), cap))
        self.t += 1
        self.datacollector.collect(self)


def _payoff(rules: BinaryGame, cooperated: bool, n_c: int, n: int, stock: float | None) -> float:
    if rules.NAME == "public_goods":
        return (0.0 if cooperated else 1.0) + rules.k * n_c / n
    if rules.NAME == "collective_risk":
        return (0.0 if cooperated else 1.0) + (rules.k if n_c >= rules.m else 0.0)
    share = stock / (2 * n)
    return share if cooperated else 2 * share


def baseline_play(
    rules: BinaryGame, lineups: list[list[StrategyEntry]], entropies: list[int]
) -> np.ndarray:
    totals = []
    for lineup, e in zip(lineups, entropies, strict=True):
        model = NaiveModel(rules, lineup, int(e))
        for _ in range(rules.n_rounds):
            model.step()
        totals.append([a.total for a in model.players])
    return np.array(totals)


# -- measurements --------------------------------------------------------------------------


def pool() -> list[StrategyEntry]:
    return list(load_strategy_set("reference_collective")) + list(
        load_strategy_set("reference_exploitative")
    )


def lineups_for(n: int, games: int, seed: int = 0) -> tuple[list[list[StrategyEntry]], list[int]]:
    rng = np.random.default_rng(seed)
    entries = pool()
    return [[entries[j] for j in rng.integers(0, len(entries), n)] for _ in range(games)], list(
        range(games)
    )


def timed(fn, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def bench_sizes(game: str, quick: bool) -> dict[int, dict[str, float]]:
    rows = {}
    print(f"\n== {game}: strategy calls/s and games/s, one core ==")
    print(
        f"{'n':>5} {'engine calls/s':>15} {'engine games/s':>15} {'baseline calls/s':>17} {'baseline games/s':>17} {'ratio':>7}"
    )
    for n in SIZES:
        rules = make_game(game, n, 20)
        eng_games = max(4, (8192 if quick else 32768) // n)
        base_games = max(1, (256 if quick else 1024) // n)
        lu, en = lineups_for(n, eng_games)
        t_eng = timed(
            lambda lu=lu, en=en, rules=rules: play_batch(rules, lu, en), repeat=2 if quick else 3
        )
        lb, eb = lineups_for(n, base_games)
        t_base = timed(
            lambda lb=lb, eb=eb, rules=rules: baseline_play(rules, lb, eb), repeat=1 if quick else 2
        )
        # same strategies, seeds and rules: identical outcomes
        check = play_batch(rules, lb, eb).totals
        np.testing.assert_allclose(check, baseline_play(rules, lb, eb))
        calls_e, calls_b = eng_games * n * 20 / t_eng, base_games * n * 20 / t_base
        rows[n] = {
            "engine_calls_per_s": calls_e,
            "engine_games_per_s": eng_games / t_eng,
            "baseline_calls_per_s": calls_b,
            "baseline_games_per_s": base_games / t_base,
            "ratio": calls_e / calls_b,
        }
        print(
            f"{n:>5} {calls_e:>15,.0f} {eng_games / t_eng:>15,.1f} {calls_b:>17,.0f} {base_games / t_base:>17,.2f} {calls_e / calls_b:>6.1f}x"
        )
    return rows


def bench_self_play(
    game: str, rows: dict[int, dict[str, float]], quick: bool, processes: int
) -> None:
    from mesa_dilemmas.dilemmas.binary.experiments.self_play import SelfPlayExperiment
    from mesa_dilemmas.scenarios.config import load_scenario
    from mesa_dilemmas.scenarios.experiment import RunContext

    fraction_samples = 4 if quick else 20
    sc, opts = load_scenario(f"{game}/self_play", [f"options.samples={fraction_samples}"])
    full_games = {n: 200 * (n + 1) for n in opts.group_sizes}
    ctx = RunContext(out_dir=Path("."), processes=1, progress=False)
    c0, t0 = time.process_time(), time.perf_counter()
    SelfPlayExperiment().run(sc, opts, ctx)
    t1, cpu1 = time.perf_counter() - t0, time.process_time() - c0
    scale = 200 / fraction_samples
    print(
        f"\n== {game}/self_play (200 samples x every split, n = 4, 16, 64, 256; "
        f"{sum(full_games.values()):,} games) =="
    )
    print(
        f"engine, 1 process : {t1:7.1f} s wall ({cpu1:.1f} s CPU) at {fraction_samples} samples/split "
        f"-> {t1 * scale:6.0f} s wall, {cpu1 * scale:6.0f} s CPU for the full scenario (x{scale:g})"
    )
    base = sum(g / rows[n]["baseline_games_per_s"] for n, g in full_games.items())
    print(
        f"baseline, 1 core  : {base:8.0f} s extrapolated from its games/s above "
        f"-> engine is {base / (t1 * scale):.1f}x faster"
    )
    if processes > 1:
        ctxp = RunContext(out_dir=Path("."), processes=processes, progress=False)
        kids0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        c0, t0 = time.process_time(), time.perf_counter()
        SelfPlayExperiment().run(sc, opts, ctxp)
        tp, cpu_main = time.perf_counter() - t0, time.process_time() - c0
        kids1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu_workers = (kids1.ru_utime + kids1.ru_stime) - (kids0.ru_utime + kids0.ru_stime)
        total = cpu_workers + cpu_main
        print(
            f"engine, {processes} processes: {tp:7.1f} s wall -> speed-up {t1 / tp:.2f}x on this machine now "
            f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)"
        )
        print(
            f"  CPU: {total:.1f} s in all processes vs {cpu1:.1f} s in one -> parallel overhead "
            f"{(total - cpu1) / cpu1:+.0%}; speed-up with {processes} idle cores "
            f"~{processes * cpu1 / total:.2f}x"
            + (" (--quick is too small to amortise worker start-up)" if quick else "")
        )


def bench_evolution(game: str, rows: dict[int, dict[str, float]], quick: bool) -> None:
    from mesa_dilemmas.dilemmas.binary.experiments.cultural_evolution import (
        CulturalEvolutionOptions,
        Evolution,
    )
    from mesa_dilemmas.scenarios.config import load_scenario

    _, opts = load_scenario(f"{game}/cultural_evolution")
    print(
        f"\n== {game}/cultural_evolution: one run (population 512, 4 games each, up to 200 generations) =="
    )
    sets = [load_strategy_set(s) for s in opts.sets]
    for n in opts.group_sizes:
        o = CulturalEvolutionOptions.model_validate(
            {**opts.model_dump(), "group_sizes": [n], "max_generations": 20 if quick else 200}
        )
        evo = Evolution(make_game(game, n, o.rounds), sets, o, np.random.SeedSequence(0))
        t0 = time.perf_counter()
        gens = sum(1 for _ in evo.generations())
        t = time.perf_counter() - t0
        per_gen_games = o.games_per_agent * o.population // n
        base = gens * per_gen_games / rows[n]["baseline_games_per_s"]
        print(
            f"n = {n:>3}: engine {t:6.1f} s for {gens} generations ({t / gens * 1000:.0f} ms/generation); "
            f"baseline {base:7.0f} s extrapolated -> {base / t:.1f}x; 200 generations: {t / gens * 200:.0f} s"
        )


def bench_paths(game: str, quick: bool) -> None:
    """Per-call (A) vs vectorised (B) path, A B A B, on a self-play and an evolution workload;
    the projected full-size CPU time of ``<game>/self_play`` and ``<game>/cultural_evolution``."""
    import pandas as pd

    from mesa_dilemmas.dilemmas.binary import engine
    from mesa_dilemmas.dilemmas.binary.experiments.cultural_evolution import (
        EvolutionTask,
        run_evolution_task,
    )
    from mesa_dilemmas.dilemmas.binary.experiments.self_play import SelfPlayExperiment, prepare_sets
    from mesa_dilemmas.scenarios.config import load_scenario
    from mesa_dilemmas.scenarios.experiment import RunContext

    samples = 2 if quick else 10
    sp_sc, sp_opts = load_scenario(f"{game}/self_play", [f"options.samples={samples}"])
    ctx = RunContext(out_dir=Path("."), processes=1, progress=False)

    def self_play() -> pd.DataFrame:
        return SelfPlayExperiment().run(sp_sc, sp_opts, ctx).runs

    ev_sc, ev_opts = load_scenario(f"{game}/cultural_evolution")
    runs = 1 if quick else 4
    params, paths, _ = prepare_sets(
        game, ev_opts.rounds, ev_opts.group_sizes, ev_opts.game_params, ev_opts.sets
    )
    specs = [(n, r) for n in ev_opts.group_sizes for r in range(ev_opts.runs)]
    seeds = np.random.SeedSequence(ev_sc.seed).spawn(len(specs))  # as the scenario seeds its runs
    dumped = ev_opts.model_dump()
    tasks = [
        EvolutionTask(game, params, n, r, paths, dumped, seed)
        for (n, r), seed in zip(specs, seeds, strict=True)
        if r < runs
    ]

    def evolution() -> list[list[float]]:
        return [run_evolution_task(t)["mean_payoff"].tolist() for t in tasks]

    workloads = {"self_play": self_play, "evolution": evolution}
    cpu: dict[tuple[str, bool], list[float]] = {}
    results: dict[tuple[str, bool], object] = {}
    was = engine.VECTOR_FORMS
    try:
        for vector in (False, True, False, True):  # A B A B
            engine.VECTOR_FORMS = vector
            for name, fn in workloads.items():
                c0 = time.process_time()
                results[name, vector] = fn()
                cpu.setdefault((name, vector), []).append(time.process_time() - c0)
    finally:
        engine.VECTOR_FORMS = was
    pd.testing.assert_frame_equal(results["self_play", False], results["self_play", True])
    assert results["evolution", False] == results["evolution", True]
    generations = sum(len(g) for g in results["evolution", True])  # type: ignore[arg-type]

    sp_scale = sp_opts.samples and 200 / samples
    ev_scale = ev_opts.runs / runs
    print(
        f"\n== {game}: per-call (A) vs vectorised (B) engine path, A B A B, CPU s, one process =="
    )
    print(
        f"self_play at {samples} samples/split (every split, n = {sp_opts.group_sizes}); "
        f"evolution: the scenario's first {runs} run(s) per group size "
        f"{ev_opts.group_sizes} ({generations} generations); results identical both ways"
    )
    print(f"{'workload':<10} {'A runs':>15} {'B runs':>15} {'A/B':>6} {'full A':>9} {'full B':>9}")
    for name, scale, full in (
        ("self_play", sp_scale, f"{game}/self_play"),
        ("evolution", ev_scale, f"{game}/cultural_evolution"),
    ):
        a, b = cpu[name, False], cpu[name, True]
        print(
            f"{name:<10} {a[0]:7.2f} {a[1]:7.2f} {b[0]:7.2f} {b[1]:7.2f} {min(a) / min(b):5.1f}x "
            f"{min(a) * scale:8.0f}s {min(b) * scale:8.0f}s  <- {full} projected (x{scale:g})"
        )
    print(
        "(full = best of the two runs x the scale, the experiment only: tables and figures "
        "are written on top; with 2 free cores the wall time is about half)"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--game", default="public_goods", choices=("public_goods", "collective_risk", "common_pool")
    )
    ap.add_argument("--quick", action="store_true", help="smaller samples (for a smoke run)")
    ap.add_argument("--processes", type=int, default=2)
    ap.add_argument("--skip-scenarios", action="store_true")
    ap.add_argument(
        "--paths-only", action="store_true", help="only the per-call vs vectorised comparison"
    )
    args = ap.parse_args()
    if args.paths_only:
        bench_paths(args.game, args.quick)
        return
    rows = bench_sizes(args.game, args.quick)
    geo = math.exp(statistics.mean(math.log(r["ratio"]) for r in rows.values()))
    print(f"geometric-mean ratio {geo:.1f}x; at n = 256: {rows[256]['ratio']:.1f}x (target >= 5x)")
    bench_paths(args.game, args.quick)
    if not args.skip_scenarios:
        bench_self_play(args.game, rows, args.quick, args.processes)
        bench_evolution(args.game, rows, args.quick)


if __name__ == "__main__":
    main()
