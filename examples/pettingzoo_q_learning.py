"""Independent tabular Q-learning in the Public Goods Game, through the PettingZoo env.

A learner sits at seat 0 of a 4-player, 10-round Public Goods Game (k = 2: a contribution
returns half of itself to its giver and doubles for the group); the other seats are the game's
reference strategy generous tit-for-tat, ``gtft(1.0, 0.3)``: cooperate after a round in which
every other player cooperated, else still cooperate with probability 0.3.  The learner keeps a
Q-table over a small state (the round's place in the game and how many of the others cooperated
last round, both read from its observation, and its own last action) and learns from its
reward, the game's payoff of its seat.  With ``--learners 2`` a second, independent learner
takes seat 1.

Run::

    python examples/pettingzoo_q_learning.py --episodes 600 [--learners 2]

It prints, every few episodes, the learners' cooperation rate and mean payoff per round with
exploration on, and at the end the greedy (learned) policy's against two fixed baselines,
always-cooperate and always-defect, each played against the same reference strategies.
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from typing import Any

import numpy as np

from mesa_dilemmas.pettingzoo import parallel_env

COOPERATE, DEFECT = 0, 1  # the action space is Discrete(2) over the options ("C", "D")
ROUNDS = 10
N_PLAYERS = 4
REFERENCE = "gtft(1.0, 0.3)"


def params(learners: int) -> dict[str, Any]:
    """The game's parameters: learners at the first seats, the reference strategy elsewhere."""
    return {
        "n_players": N_PLAYERS,
        "rounds": ROUNDS,
        "k": 2.0,
        "rl_seats": list(range(learners)),
        "players": {"groups": [{"strategy": REFERENCE, "seats": list(range(learners, N_PLAYERS))}]},
    }


def state_of(observation: np.ndarray, names: tuple[str, ...], mine: int) -> tuple[int, int, int]:
    """(first, middle or last round; the others' cooperators last round; my own last action)
    from the observation and the learner's memory of its last action."""
    feature = dict(zip(names, observation.tolist(), strict=True))
    played, total = int(feature["round"]), int(feature["n_rounds"])
    phase = 0 if played == 0 else (2 if played == total - 1 else 1)
    return phase, int(feature["opponent_cooperators[-1]"]), mine


def play(
    env: Any,
    q: dict[str, defaultdict[tuple[int, int, int], np.ndarray]],
    rng: np.random.Generator,
    *,
    seed: int,
    epsilon: float,
    alpha: float = 0.1,
    gamma: float = 0.95,
    fixed: int | None = None,
) -> tuple[float, float]:
    """One episode (learning when ``epsilon`` > 0); the learners' cooperation rate and mean
    payoff per round."""
    names = env.feature_names
    observations, _ = env.reset(seed=seed)
    states = {a: state_of(observations[a], names, -1) for a in env.agents}
    cooperations, payoff, decisions = 0, 0.0, 0
    while env.agents:
        actions = {}
        for agent in env.agents:
            if fixed is not None:
                actions[agent] = fixed
            elif rng.random() < epsilon:
                actions[agent] = int(rng.integers(2))
            else:
                actions[agent] = int(np.argmax(q[agent][states[agent]]))
        observations, rewards, terminations, truncations, _ = env.step(actions)
        for agent, action in actions.items():
            cooperations += action == COOPERATE
            payoff += rewards[agent]
            decisions += 1
            nxt = state_of(observations[agent], names, action)
            done = terminations[agent] or truncations[agent]
            if epsilon > 0:
                target = rewards[agent] + (0.0 if done else gamma * q[agent][nxt].max())
                q[agent][states[agent]][action] += alpha * (
                    target - q[agent][states[agent]][action]
                )
            states[agent] = nxt
    return cooperations / decisions, payoff / decisions


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--episodes", type=int, default=600)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--learners", type=int, default=1, choices=(1, 2, 3))
    args = parser.parse_args(argv)
    env = parallel_env("public_goods", **params(args.learners))
    rng = np.random.default_rng(args.seed)
    q: dict[str, defaultdict[tuple[int, int, int], np.ndarray]] = {
        a: defaultdict(lambda: np.zeros(2)) for a in env.possible_agents
    }
    every = max(1, args.episodes // 6)
    coop_window, pay_window = [], []
    print("episode  cooperation  payoff/round  (learners, exploring)")
    for episode in range(1, args.episodes + 1):
        epsilon = max(0.05, 1.0 - episode / (0.7 * args.episodes))
        coop, pay = play(env, q, rng, seed=args.seed * 100_000 + episode, epsilon=epsilon)
        coop_window.append(coop)
        pay_window.append(pay)
        if episode % every == 0 or episode == args.episodes:
            print(f"{episode:7d}  {np.mean(coop_window):11.2f}  {np.mean(pay_window):12.2f}")
            coop_window, pay_window = [], []
    print(f"evaluation over 50 episodes against {REFERENCE}:")
    for label, fixed in (
        ("learned (greedy)", None),
        ("always cooperate", COOPERATE),
        ("always defect", DEFECT),
    ):
        results = [play(env, q, rng, seed=10**9 + i, epsilon=0.0, fixed=fixed) for i in range(50)]
        coop, pay = np.mean(results, axis=0)
        print(f"  {label:17s} cooperation {coop:.2f}  payoff/round {pay:.2f}")
    env.close()


if __name__ == "__main__":
    main()
