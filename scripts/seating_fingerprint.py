"""Fingerprint how the fishery and Port of Mars seat their players (rule and LLM seats, personas,
drawn strategies, dealt cards, and the generator state after seating) over 25 seeds.

Run on two commits (from each checkout) to show a change of layout seats the same players
(the games as built since parameters became a class: ``build_model`` expands the ``llm_agents``
/ ``llm_players`` shorthands, the seated agents are ``model.seats``)."""

import hashlib
import json

import numpy as np

from mesa_dilemmas.dilemmas.base import build_model
from mesa_dilemmas.dilemmas.fishery import FisheryModel
from mesa_dilemmas.dilemmas.port_of_mars import PortOfMarsModel

h = hashlib.sha256()
for seed in range(25):
    for kw in (
        {"llm_agents": 4, "llm": "local"},
        {"llm_agents": 0},
        {"population": "typed", "llm_agents": 3, "llm": "local"},
    ):
        m = build_model(FisheryModel, kw, seed)
        h.update(
            json.dumps(
                [
                    [v.unique_id, v.slot, v.norm_text, v.persona.disposition, v.policy.name]
                    for v in m.villagers
                ]
            ).encode()
        )
        for name in ("strategy_effort", "monitoring", "punishing", "personal_norm", "language"):
            h.update(np.asarray(m.seats.get(name)).tobytes())
        h.update(repr(m.rng.random()).encode())
    for kw in ({}, {"llm_players": 2, "llm": "local"}, {"preset": "cultural"}):
        p = build_model(PortOfMarsModel, kw, seed)
        h.update(
            json.dumps(
                [[a.unique_id, a.slot, a.policy.name, str(a.persona)] for a in p.seats]
            ).encode()
        )
        h.update(
            json.dumps(
                [[pl.seat, pl.role, pl.label, [c.name for c in pl.hand]] for pl in p.seats]
            ).encode()
        )
        h.update(repr(p.rng.random()).encode())
print(h.hexdigest())
