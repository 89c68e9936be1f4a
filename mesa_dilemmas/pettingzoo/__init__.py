"""Every registered game as a PettingZoo environment (``pip install mesa-dilemmas[pettingzoo]``).

::

    from mesa_dilemmas.pettingzoo import parallel_env, env

    penv = parallel_env(game, rl_seats=1)   # a registered game's name; seat 0 learns
    observations, infos = penv.reset(seed=1)
    while penv.agents:
        actions = {a: penv.action_space(a).sample() for a in penv.agents}
        observations, rewards, terminations, truncations, infos = penv.step(actions)

Nothing else in the package imports this module; see ``docs/pettingzoo.md``.
"""

from mesa_dilemmas.pettingzoo.env import DilemmaParallelEnv, env, parallel_env, seat_score
from mesa_dilemmas.pettingzoo.seats import ExternalPolicy

__all__ = ["DilemmaParallelEnv", "ExternalPolicy", "env", "parallel_env", "seat_score"]
