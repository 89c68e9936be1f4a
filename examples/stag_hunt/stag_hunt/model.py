"""n-player Stag Hunt: a coordination dilemma in one Mesa model.

Each round every hunter chooses ``stag`` or ``hare``.  A hare pays ``hare_payoff`` for sure;
the stag is caught only if at least ``threshold`` hunters go for it, and then pays every stag
hunter ``stag_payoff``; a failed stag hunt pays 0.  Payoff-dominant play (all stag) is risky;
risk-dominant play (all hare) is safe.  Hunters are rule players that go for the stag with a
probability that follows last round's success, or any policy a population gives them.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

import mesa
from pydantic import Field

from mesa_dilemmas.agents import ChoiceSpec, Decision, RulePolicy
from mesa_dilemmas.agents.base import DilemmaAgent
from mesa_dilemmas.agents.persona import Persona
from mesa_dilemmas.agents.policy import Policy
from mesa_dilemmas.agents.population import Population
from mesa_dilemmas.dilemmas.base import DilemmaModel, DilemmaParameters

HUNT = ChoiceSpec(("stag", "hare"))


class Hunter(RulePolicy):
    """Goes for the stag with probability ``trust``; trust follows how last round's hunt went."""

    name = "rule"

    def __init__(self, trust: float = 0.6) -> None:
        self.trust = trust

    def hunt(self, decision: Decision) -> str:
        last = decision.observation["last_stag_hunt"]
        if last == "caught":
            self.trust = min(1.0, self.trust + 0.1)
        elif last == "failed":
            self.trust = max(0.0, self.trust - 0.1)
        return "stag" if self.agent.model.random.random() < self.trust else "hare"


#: the rule players a population may name (``{ rule = "rule" }``)
RULE_PLAYERS = {"rule": lambda **_: Hunter()}


class StagHuntParameters(DilemmaParameters):
    """The game's parameters, one typed object: the CLI, TOML scenarios, sweeps and the
    dashboard read these fields; the model reads them as ``self.p``."""

    n_hunters: Annotated[int, Field(ge=2, le=500, description="hunters in the group")] = 8
    threshold: Annotated[
        int, Field(ge=1, le=500, description="hunters needed to catch the stag")
    ] = 5
    stag_payoff: Annotated[
        float, Field(gt=0, le=100, description="what each stag hunter gets when the stag is caught")
    ] = 4.0
    hare_payoff: Annotated[
        float, Field(ge=0, le=100, description="what a hare hunter gets, always")
    ] = 1.0
    rounds: Annotated[int, Field(ge=1, le=1000, description="rounds a game lasts")] = 30
    players: Annotated[
        Population | None,
        Field(description="who plays: a [population] table of rule and LLM groups"),
    ] = None


class HunterAgent(DilemmaAgent):
    """A hunter at its seat: its policy chooses, the agent keeps what it earned."""

    def __init__(self, model: mesa.Model, policy: Policy, persona: Persona) -> None:
        super().__init__(model, policy, persona)
        self.wealth = 0.0

    def earn(self, choice: str, caught: bool) -> float:
        p = self.model.p
        payoff = p.hare_payoff if choice == "hare" else (p.stag_payoff if caught else 0.0)
        self.wealth += payoff
        return payoff


class StagHuntModel(DilemmaModel):
    """n hunters choose stag (together) or hare (alone), round after round."""

    GAME: ClassVar[str] = "stag_hunt"
    PHASES: ClassVar[tuple[str, ...]] = ("hunt",)
    RUN_METRICS: ClassVar[tuple[str, ...]] = ("stag_share", "mean_payoff", "caught")
    Parameters = StagHuntParameters

    def __init__(self, *, rng: Any = None, **params: Any) -> None:
        super().__init__(rng=rng, **params)
        self.validate_params(self.p.model_dump())
        self.population = self.population_from_params({"players": self.p.players})
        # one agent per seat, as the population says
        self.seat_players(self.p.n_hunters, rules=RULE_PLAYERS, agent_of=self.hunter)
        self.last_hunt, self.stag_share, self.mean_payoff, self.caught = "none yet", 0.0, 0.0, 0
        self.datacollector = mesa.DataCollector(
            model_reporters={
                "stag_share": "stag_share",
                "mean_payoff": "mean_payoff",
                "caught": "caught",
            },
            agent_reporters={"wealth": "wealth"},
        )
        self.datacollector.collect(self)

    def hunter(self, seat: int, policy: Policy, persona: Persona) -> HunterAgent:
        return HunterAgent(self, policy, persona)

    @classmethod
    def validate_params(cls, params: dict[str, Any]) -> None:
        n, k = params.get("n_hunters", 8), params.get("threshold", 5)
        if k > n:
            raise ValueError(f"threshold: {k} exceeds n_hunters={n}")
        cls.population_from_params(params).check(n)

    def phase_hunt(self) -> None:
        hunters = list(self.agents)
        seen = {"last_stag_hunt": self.last_hunt, "threshold": self.p.threshold}
        choices = self.ask_all(
            [
                Decision("stag_hunt.hunt", HUNT, seen, a, self.round, fallback="hare")
                for a in hunters
            ]
        )
        stags = [a for a, c in zip(hunters, choices, strict=True) if c == "stag"]
        success = len(stags) >= self.p.threshold
        paid = sum(a.earn(c, success) for a, c in zip(hunters, choices, strict=True))
        self.stag_share = len(stags) / len(hunters)
        self.mean_payoff = paid / len(hunters)
        self.caught += int(success)
        self.last_hunt = "caught" if success else ("failed" if stags else "nobody tried")

    def end_of_round(self) -> None:
        super().end_of_round()
        if self.round >= self.p.rounds:
            self.running = False
