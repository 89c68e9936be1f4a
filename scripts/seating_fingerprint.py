"""Fingerprint how the fishery and Port of Mars seat their players (rule and LLM seats, personas,
drawn strategies, dealt cards, and the generator state after seating) over 25 seeds.

Run on two commits (from each checkout) to show a change of layout seats the same players; it
imports the games from either layout."""

import hashlib
import json

import numpy as np

try:
    from mesa_dilemmas.dilemmas.fishery.model import FisheryModel
    from mesa_dilemmas.dilemmas.port_of_mars.model import PortOfMarsModel
except ImportError:
    from mesa_dilemmas.dilemmas.fishery import FisheryModel
    from mesa_dilemmas.dilemmas.port_of_mars import PortOfMarsModel
h = hashlib.sha256()
for seed in range(25):
    for kw in (
        {"llm_agents": 4, "llm": "local"},
        {"llm_agents": 0},
        {"population": "typed", "llm_agents": 3, "llm": "local"},
    ):
        m = FisheryModel(rng=seed, **kw)
        h.update(
            json.dumps(
                [
                    [v.unique_id, v.slot, v.norm_text, v.persona.disposition, v.policy.name]
                    for v in m.villagers
                ]
            ).encode()
        )
        for a in (m.strategy_effort, m.monitor, m.punish_p, m.norm, m.language):
            h.update(np.asarray(a).tobytes())
        h.update(repr(m.rng.random()).encode())
    for kw in ({}, {"llm_players": 2, "llm": "local"}, {"preset": "cultural"}):
        p = PortOfMarsModel(rng=seed, **kw)
        h.update(
            json.dumps(
                [[a.unique_id, a.slot, a.policy.name, str(a.persona)] for a in p.seats]
            ).encode()
        )
        h.update(
            json.dumps(
                [[pl.seat, pl.role, pl.label, [c.name for c in pl.hand]] for pl in p.players]
            ).encode()
        )
        h.update(repr(p.rng.random()).encode())
print(h.hexdigest())
