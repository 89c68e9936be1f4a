"""Port of Mars (paper 001; Janssen et al. 2020) as a Mesa model: complete rules, any players.

Five players -- Curator, Entrepreneur, Pioneer, Politician, Researcher -- keep a
shared port alive while racing for points.  Everything a player reads uses the
paper's names: **coins** (time blocks), **port health** (system health),
**resources** (influence), **events** and **accomplishments** (cards).

A round (``step()``) runs these phases, in the paper's order plus the two
bookkeeping phases of the online game:

``new_round``
    Coins reset to 10 (they never carry over), hands refill to 3 from each
    role's own deck, then wear and tear: port health -25.
``events``
    Not in round 1 (online game; ``events_in_first_round`` changes it).  Running
    Sandstorms hit again, then 1, 2 or 3 new events are drawn depending on the
    port health after wear (>= 65: one, >= 35: two, below: three) and resolved in
    turn, with their votes and choices (``port_of_mars.vote``, ``port_of_mars.event_choice``,
    ``port_of_mars.keep_resources``); see :mod:`.events`.
``meeting``
    The meeting writer (population role ``meeting``; ``meeting_writer = "rule" | "llm"``)
    writes the conversation in one call and each player's notes in a second; the next round
    carries the notes, not the transcript (:mod:`.meeting`).  Skipped when
    ``meeting=False`` or a Solar Flare silences the round.
``planning``
    Health plan (``port_of_mars.health_plan``) and accomplishment goal (``port_of_mars.goal_plan``).
``investment``
    ``port_of_mars.invest``: coins split between port health (1 coin per point, 2 under
    Difficult Conditions) and resources at the role's prices (specialty 2, two
    others 3, two only by trade; events change this).  Resources arrive at once,
    port health is credited at the end of the round.
``trading``
    ``port_of_mars.trade_offer`` (all at once) then ``port_of_mars.trade_accept`` (each recipient in
    turn, offers in random order); executed atomically after re-checking both
    sides.  Skipped under Markets Closed or Solar Flare.
``purchase``
    ``port_of_mars.purchase``: buy any affordable accomplishments in hand; points at once,
    the port-health cost of "dirty" ones is booked for the end of the round.
``discard``
    ``port_of_mars.discard``: return unwanted accomplishments under the deck.
``end_round``
    Port health += booked investments - dirty costs (clamped to 0..100).  Port
    health at 0 at any phase boundary collapses the port: the game ends for
    everyone, nobody wins and final points are 0.  After the last round (9, or a
    hidden random 8..12 with ``random_rounds``) the game ends in survival and the
    players with the most points win (ties: all of them).

Choices where the sources disagree or the online game is ambiguous/buggy
(also in ``docs/port_of_mars.md``):

* Role costs default to the online implementation; ``role_table="paper"`` gives
  the Politician Culture/Legacy at 3 as in the paper's Appendix A.
* The online game skips the final round's port-health settlement; we settle it
  by default (``settle_final_round``) so a dirty accomplishment in the last round
  is not free and "survival" means port health > 0 after the last round.
* The event deck is drawn without replacement and reshuffled in full when empty
  (the online game's pointer walk skips cards by a quirk).
* Health plans are not binding rules: the plan is shown to the player when it
  invests (and is the investment's fallback); the investment is what counts.
* An offer whose sender no longer holds the offered resources (because of an
  earlier accepted trade) is cancelled without asking the recipient.
* Trade offers per player and trade rounds are parameters (paper: one offer per
  player per round; the online game has free-form trading for three minutes).
* Event-specific choices are listed in :mod:`.events`.

* Personal Gain: a "yes" gives 6 coins and costs 6 port health, applied before any other
  event of the round; Bonding Through Adversity: every player gains 1 unit of a resource of
  its choice (the online game's data; the rule player picks the unit its goal misses most).

Leadership (paper Sec. 4.4) only changes what each player is told (see
:meth:`PortOfMarsModel.leadership_info` and ``prompts/parts/leadership.toml``),
never the rules.

Parameters: one typed object, :class:`~.parameters.PortOfMarsParameters`, read as
``model.p`` (``model.p.n_rounds``); the CLI, TOML scenarios, grids and the dashboard read the
same fields.  Players: ``preset`` picks the personas (SVO angles, cultural groups, trait sets
or the online game's bot); ``players`` (a :class:`Population`, a scenario's ``[population]``)
says who plays each seat and who writes the meeting (without a ``roles.meeting``: the rule
writer).  The scenario shorthands (:class:`~.parameters.PortOfMarsShorthands`)
``policy_factory`` (``"rule"``, ``"reference_bot"``, ``"random"`` or ``"module:callable"``),
``llm_players = N`` (the first N seats on the model ``llm``) and ``meeting_writer = "llm"``
expand into that population (:meth:`PortOfMarsModel.population_from_params`, called by
:func:`~mesa_dilemmas.dilemmas.base.build_model`) before the model is built: the model never
receives them.  ``set_policies`` replaces the policies after construction (scripted play).

Each seat is one Mesa agent, a :class:`Player`: persona and policy plus the seat's whole game
state (role, hand, resources, coins, points, goal, plan, statistics), which the agent reporters
read.  ``model.seats`` is them as Mesa's AgentSet in seat order (``do``/``get``/``select`` over
all seats, iteration in seat order); ``model.player(seat)`` is one of them.

What a player reads: the observation (:meth:`PortOfMarsModel.observe`) plus two texts the
game renders into it for LLM players (:mod:`.text`); the templates per decision
kind are data in ``prompts/``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any, ClassVar

from mesa import DataCollector
from mesa.agentset import AgentSet

from mesa_dilemmas.agents.base import DilemmaAgent
from mesa_dilemmas.agents.decisions import (
    ChoiceSpec,
    ListSpec,
    NumberSpec,
)
from mesa_dilemmas.agents.persona import Persona
from mesa_dilemmas.agents.policy import Policy
from mesa_dilemmas.agents.population import Group, Population, population_table
from mesa_dilemmas.dilemmas.base import DilemmaModel
from mesa_dilemmas.dilemmas.port_of_mars import text
from mesa_dilemmas.dilemmas.port_of_mars.cards import (
    RESOURCES,
    ROLES,
    Accomplishment,
    AccomplishmentDeck,
    EventCard,
    EventDeck,
    RoleSpec,
    bundle_text,
    role_specs,
)
from mesa_dilemmas.dilemmas.port_of_mars.events import (
    PERSONAL_GAIN_COINS,
    RoundEffects,
    apply_ongoing,
    resolve_deferred,
    resolve_event,
)
from mesa_dilemmas.dilemmas.port_of_mars.meeting import run_meeting
from mesa_dilemmas.dilemmas.port_of_mars.metrics import Metrics
from mesa_dilemmas.dilemmas.port_of_mars.observe import Observations
from mesa_dilemmas.dilemmas.port_of_mars.parameters import (
    PortOfMarsParameters,
    PortOfMarsShorthands,
)
from mesa_dilemmas.dilemmas.port_of_mars.persona import CrewPersona
from mesa_dilemmas.dilemmas.port_of_mars.prompts import PROMPTS_DIR
from mesa_dilemmas.dilemmas.port_of_mars.specs import (
    budget_spec,
    shown_card,
    shown_cards,
    shown_coins,
    shown_spend,
)
from mesa_dilemmas.dilemmas.port_of_mars.trade import (
    TradeOffer,
    execute,
    offer_spec,
    shown_offer_spec,
)


class Player(DilemmaAgent):
    """One seat of Port of Mars as a Mesa agent: its persona and policy (:class:`DilemmaAgent`)
    and its whole game state -- role, hand, resources, coins, points, goal, health plan -- with
    the per-round and whole-game statistics the reporters read.

    Built by :meth:`PortOfMarsModel.__init__` through ``seat_players(agent_of=...)``: the role's
    deck is shuffled and the first hand drawn right after the agent is registered, seat by seat
    (the order of the model's random draws)."""

    def __init__(
        self,
        model: PortOfMarsModel,
        policy: Policy,
        persona: Persona,
        *,
        seat: int,
        role: str,
        label: str,
        hand_size: int,
    ) -> None:
        super().__init__(model, policy, persona)
        self.seat = seat
        self.role = role
        self.label = label
        self.deck = AccomplishmentDeck(role, model.rng)
        self.hand: list[Accomplishment] = []
        self.purchased: list[Accomplishment] = []
        self.resources: dict[str, int] = dict.fromkeys(RESOURCES, 0)
        self.coins = 0
        self.points = 0
        self.goal: str | None = None
        self.health_plan: int | None = None
        # this round
        self.health_coins_round = 0
        self.health_units_round = 0
        self.dirty_cost_round = 0
        self.dirty_cards_round = 0
        self.bought_round: dict[str, int] = {}
        # whole game
        self.health_coins_total = 0
        self.health_coins_by_round: list[int] = []
        self.resources_bought_total = 0
        self.cards_bought = 0
        self.cards_returned = 0
        self.dirty_cards_bought = 0
        self.dirty_health_cost = 0
        self.dirty_taken = 0
        self.dirty_opportunities = 0
        self.personal_gain_yes = 0
        self.trades_proposed: Counter = Counter()
        self.trades_accepted: Counter = Counter()
        self.trades_received = 0
        self.trades_received_accepted = 0
        self.trades_received_rejected = 0
        self.draw(hand_size)

    def __repr__(self) -> str:
        return f"Player(seat={self.seat}, role={self.role!r}, label={self.label!r})"

    # -- cards ------------------------------------------------------------
    def hand_card(self, name: str) -> Accomplishment | None:
        return next((c for c in self.hand if c.name == name), None)

    def missing_for(self, card: Accomplishment) -> dict[str, int]:
        return {r: n - self.resources[r] for r, n in card.cost if self.resources[r] < n}

    def draw(self, n: int) -> None:
        """Draw up to ``n`` cards from the top of the own deck into the hand."""
        for _ in range(n):
            card = self.deck.draw()
            if card is None:
                break
            self.hand.append(card)

    def return_hand(self) -> None:
        """Put the whole hand under the deck (the goal goes with it)."""
        for card in self.hand:
            self.deck.put_bottom(card)
        self.hand = []
        self.goal = None

    def forget_lost_goal(self) -> None:
        """Drop the goal when its card is no longer in hand."""
        if self.goal is not None and self.hand_card(self.goal) is None:
            self.goal = None

    # -- rounds -----------------------------------------------------------
    def start_round(self, coins: int, refill_to: int | None) -> None:
        """New round: fresh coins, per-round statistics reset, the hand refilled to
        ``refill_to`` cards (None: not refilled, round 1)."""
        self.coins = coins
        self.health_plan = None
        self.health_coins_round = 0
        self.health_units_round = 0
        self.dirty_cost_round = 0
        self.dirty_cards_round = 0
        self.bought_round = {}
        if refill_to is not None:
            self.draw(refill_to - len(self.hand))
        self.forget_lost_goal()

    def close_round(self) -> None:
        """Book this round's coins to port health into the whole-game record."""
        self.health_coins_total += self.health_coins_round
        self.health_coins_by_round.append(self.health_coins_round)

    # -- actions ----------------------------------------------------------
    def invest(self, alloc: dict[str, int], costs: dict[str, int]) -> None:
        """Spend coins on port health (credited at round end) and resources (credited now)."""
        spent = sum(costs[k] * int(v or 0) for k, v in alloc.items())
        if spent > self.coins:  # a spec guarantees this; forced investments are computed in range
            raise AssertionError(f"{self.role} spends {spent} coins but has {self.coins}")
        units = int(alloc.get("port_health") or 0)
        self.coins -= spent
        self.health_units_round += units
        self.health_coins_round += units * costs["port_health"]
        for r in RESOURCES:
            n = int(alloc.get(r) or 0)
            if n:
                self.resources[r] += n
                self.bought_round[r] = self.bought_round.get(r, 0) + n
                self.resources_bought_total += n

    def purchase(self, names: Sequence[str]) -> None:
        """Buy the named accomplishments still in hand and affordable, in the order given."""
        had_dirty = any(c.dirty for c in self.hand)
        took_dirty = False
        for name in dict.fromkeys(names):
            card = self.hand_card(name)
            if card is None or not card.affordable(self.resources):
                continue
            for r, n in card.cost:
                self.resources[r] -= n
            self.hand.remove(card)
            self.purchased.append(card)
            self.points += card.points
            self.cards_bought += 1
            if card.dirty:
                took_dirty = True
                self.dirty_cards_bought += 1
                self.dirty_cards_round += 1
                self.dirty_cost_round += card.health_cost
                self.dirty_health_cost += card.health_cost
            if self.goal == card.name:
                self.goal = None
        if had_dirty:
            self.dirty_opportunities += 1
            self.dirty_taken += int(took_dirty)

    def discard(self, names: Sequence[str]) -> None:
        """Return the named cards in hand to the bottom of the deck."""
        for name in dict.fromkeys(names):
            card = self.hand_card(name)
            if card is None:
                continue
            self.hand.remove(card)
            self.deck.put_bottom(card)
            if self.goal == name:
                self.goal = None


#: the earlier name of :class:`Player` (game state and agent were separate objects)
PomPlayer = Player


class PortOfMarsModel(Observations, Metrics, DilemmaModel):
    """Port of Mars with five players whose decisions all go through the decision broker."""

    GAME: ClassVar[str] = "port_of_mars"
    PERSONA = CrewPersona

    @classmethod
    def rule_players(cls) -> dict[str, Any]:
        """The rule players a population may name: the persona-driven player, the online
        game's bot, a random legal player (``players.RULE_PLAYERS``)."""
        from mesa_dilemmas.dilemmas.port_of_mars.players import RULE_PLAYERS

        return RULE_PLAYERS

    #: the prompt templates of LLM players (registered as ``port_of_mars.<kind>``)
    PROMPTS_DIR: ClassVar[Any] = PROMPTS_DIR
    PHASES: ClassVar[tuple[str, ...]] = (
        "new_round",
        "events",
        "meeting",
        "planning",
        "investment",
        "trading",
        "purchase",
        "discard",
        "end_round",
    )
    N_PLAYERS: ClassVar[int] = 5
    POPULATION_ROLES: ClassVar[tuple[str, ...]] = ("meeting",)
    #: per-seat reporters (``agents.parquet``), named apart from every model reporter; each
    #: reads the :class:`Player` agent's own state
    AGENT_REPORTERS: ClassVar[dict[str, Any]] = {
        "player_role": lambda a: a.role,
        "player_label": lambda a: a.label,
        "player_points": lambda a: a.points,
        "player_health_coins_round": lambda a: a.health_coins_round,
        "player_health_coins_total": lambda a: a.health_coins_total,
        "player_resources_held": lambda a: sum(a.resources.values()),
        "player_dirty_cards": lambda a: a.dirty_cards_bought,
    }
    COINS_PER_ROUND: ClassVar[int] = 10
    START_HEALTH: ClassVar[int] = 100
    MAX_HEALTH: ClassVar[int] = 100
    WEAR: ClassVar[int] = 25
    #: port health thresholds (after wear) for 2 and 3 events
    TWO_EVENTS_BELOW: ClassVar[int] = 65
    THREE_EVENTS_BELOW: ClassVar[int] = 35
    HAND_SIZE: ClassVar[int] = 3
    #: the most coins a player can hold in a round: its pay, and the extra a personal-gain
    #: event may add (the range every seat's prompt shows; a seat's own coins are checked)
    MAX_COINS: ClassVar[int] = COINS_PER_ROUND + PERSONAL_GAIN_COINS
    HEALTH_COIN_COST: ClassVar[int] = 1
    #: the per-run metrics a batch summary aggregates (mean, sem per grid cell)
    RUN_METRICS: ClassVar[tuple[str, ...]] = (
        "survived",
        "collapse_round",
        "port_health",
        "final_points_mean",
        "points_mean",
        "gini_points",
        "health_coins_total",
        "pct_dirty",
        "dirty_cards_total",
        "events_drawn_total",
        "trades_proposed",
        "trades_accepted",
        "trades_proposed_fair",
        "trades_proposed_generous",
        "trades_proposed_selfish",
        "n_winners",
        "meetings_held",
        "meeting_fallbacks",
    )

    Parameters = PortOfMarsParameters
    Shorthands = PortOfMarsShorthands

    def __init__(self, *, rng: Any = None, narrator: Policy | None = None, **params: Any) -> None:
        from mesa_dilemmas.dilemmas.port_of_mars import personas as persona_rules
        from mesa_dilemmas.dilemmas.port_of_mars.narrator import MEETING_WRITERS
        from mesa_dilemmas.dilemmas.port_of_mars.players import RULE_PLAYERS

        super().__init__(rng=rng, narrator=narrator, **params)
        p = self.p
        if p.min_rounds > p.max_rounds:
            raise ValueError(f"min_rounds ({p.min_rounds}) > max_rounds ({p.max_rounds})")
        #: who plays: the population given (``players``; none: the rule players), with the
        #: rule meeting writer when it names no ``roles.meeting`` and the meeting sits
        self.population = self.population_from_params({"players": p.players, "meeting": p.meeting})
        #: render the player texts for rule seats too (tests, inspection); LLM seats always get them
        self.texts_for_all = False
        self.meetings_held = 0
        self.meeting_fallbacks = 0
        writer = self.population.roles.get("meeting")
        #: the writer states offers and needs as data only when it is a rule writer
        self.meeting_market = writer is None or writer.kind == "rule"
        if p.meeting and self.broker.narrator is None:
            self.broker.narrator = self.population.build(
                writer, model=self, seat=None, persona=CrewPersona(), rules=MEETING_WRITERS
            )
            self.broker.narrator.bind(None)
        #: the game's length: ``n_rounds``, or drawn from min_rounds..max_rounds (players never know)
        self.n_rounds_total = (
            int(self.rng.integers(p.min_rounds, p.max_rounds + 1))
            if p.random_rounds
            else p.n_rounds
        )
        self.specs: dict[str, RoleSpec] = role_specs(p.role_table)
        personas = persona_rules.preset_personas(
            p.preset,
            svo_angles=list(p.svo_angles),
            cultural_groups=list(p.cultural_groups),
            traits=list(p.traits),
            rng=self.rng,
        )
        if p.roles and sorted(p.roles) != sorted(ROLES):
            raise ValueError(f"roles must be a permutation of {list(ROLES)}, got {list(p.roles)}")
        #: each seat's role, in seat order (``roles``, or a random permutation)
        self.roles: list[str] = (
            list(p.roles) if p.roles else [ROLES[i] for i in self.rng.permutation(len(ROLES))]
        )
        self.event_deck = EventDeck(self.rng, {"lifeAsUsual": p.life_as_usual_copies})
        self.health = self.START_HEALTH
        self.health_after_wear = self.START_HEALTH

        def persona_of(seat: int, group: Group | None) -> Persona:
            return self.population.persona_for(group, personas[seat])

        def seated(seat: int, policy: Policy, persona: Persona) -> Player:
            return Player(
                self,
                policy,
                persona,
                seat=seat,
                role=self.roles[seat],
                label=persona_rules.persona_label(persona),
                hand_size=self.HAND_SIZE,
            )

        self._by_seat: list[Player] = self.seat_players(  # type: ignore[assignment]
            self.N_PLAYERS, rules=RULE_PLAYERS, persona_of=persona_of, agent_of=seated
        )
        #: the players (Mesa agents holding their game state) as an AgentSet in seat order
        #: (``do`` / ``get`` / ``select`` over every seat); one seat: :meth:`player`
        self.seats: AgentSet[Player] = AgentSet(self._by_seat, random=self.random)
        if p.leadership == "none":
            self.leader: int | None = None
        else:
            self.leader = (
                p.leader_seat if p.leader_seat >= 0 else int(self.rng.integers(self.N_PLAYERS))
            )

        # round state
        self.effects = RoundEffects()
        self.ongoing: list[list[Any]] = []
        self.pending_forced: list[int] = []
        self.extra_draws = 0
        self.events_round: list[EventCard] = []
        self.ongoing_shown: list[dict[str, Any]] = []
        self.n_events = 0
        self.meeting_held = False
        self.meeting_conversation: str | None = None
        #: port health when this round's meeting sat (after wear and events, before investment)
        self.meeting_health = self.START_HEALTH
        self.meeting_summaries: dict[str, str] = {}
        self.pledges: dict[str, int] | None = None
        self.market: dict[str, dict[str, list[str]]] | None = None
        self.round_offers: list[TradeOffer] = []
        self.last_round: dict[str, Any] | None = None
        # game record
        self.collapsed = False
        self.collapse_round: int | None = None
        self.game_over = False
        self.survived = False
        self.winners: list[int] = []
        self.event_counts: Counter = Counter()
        self.events_drawn_total = 0
        self.trades: list[TradeOffer] = []
        self.health_history: list[int] = []

        self.datacollector = DataCollector(
            model_reporters=self._model_reporters(),
            agent_reporters=dict(self.AGENT_REPORTERS),
        )
        self.datacollector.collect(self)

    @classmethod
    def population_from_params(cls, params: dict[str, Any]) -> Population:
        """``players`` (a population), or the shorthands: ``policy_factory`` for every seat (a
        rule player's name, or ``"module:callable"``), ``llm_players = N`` for seats 0..N-1 on
        ``llm``.  The meeting writer is the population's ``roles.meeting`` if it names one, else
        ``meeting_writer``: ``"rule"`` (the default, whoever plays) or ``"llm"`` (the model
        ``llm``)."""
        players = population_table(params.get("players"))
        factory = params.get("policy_factory", "rule")
        n_llm = params.get("llm_players", 0)
        writer = params.get("meeting_writer", "rule")
        if writer not in ("rule", "llm"):
            raise ValueError(f"meeting_writer: expected 'rule' or 'llm', got {writer!r}")
        shorthand = n_llm or factory != "rule"
        if shorthand and players.groups:
            raise ValueError("players: give either a population or llm_players/policy_factory")
        groups = list(players.groups)
        if n_llm:
            groups.append(Group(llm=params.get("llm", "local"), seats=list(range(n_llm))))
        if n_llm < cls.N_PLAYERS and factory != "rule":
            kind = "factory" if ":" in factory else "rule"
            groups.append(Group(**{kind: factory}, seats=list(range(n_llm, cls.N_PLAYERS))))
        roles = dict(players.roles)
        if "meeting" not in roles and params.get("meeting", True):
            roles["meeting"] = (
                Group(llm=params.get("llm", "local")) if writer == "llm" else Group(rule="rule")
            )
        return Population(groups=groups, placement=players.placement, roles=roles)

    @classmethod
    def validate_params(cls, params: dict[str, Any]) -> None:
        cls.population_from_params(params).check(cls.N_PLAYERS, roles=cls.POPULATION_ROLES)

    # -- rules helpers ----------------------------------------------------
    def role_spec(self, seat: int) -> RoleSpec:
        return self.specs[self.roles[seat]]

    def health_cost(self) -> int:
        """Coins per point of port health this round."""
        return self.HEALTH_COIN_COST * self.effects.health_cost_factor

    def coin_costs(self, seat: int) -> dict[str, int]:
        """This round's coin price of every resource the seat can buy (events applied)."""
        from mesa_dilemmas.dilemmas.port_of_mars.events import INTERDISCIPLINARY_COST

        spec = self.role_spec(seat)
        costs = {r: c for r, c in spec.costs.items() if c is not None}
        if self.effects.interdisciplinary:
            for r in spec.trade_only:
                costs[r] = INTERDISCIPLINARY_COST
        if self.effects.stymied:
            costs.pop(spec.specialty, None)
        return {r: costs[r] for r in RESOURCES if r in costs}

    def events_count(self, health: int) -> int:
        if health < self.THREE_EVENTS_BELOW:
            return 3
        if health < self.TWO_EVENTS_BELOW:
            return 2
        return 1

    def change_health(self, delta: int) -> None:
        self.health = int(min(self.MAX_HEALTH, max(0, self.health + delta)))

    def player(self, seat: int) -> Player:
        """The player at ``seat`` (``seats`` is an AgentSet: no indexing)."""
        return self._by_seat[seat]

    def draw_cards(self, p: Player, n: int) -> None:
        p.draw(n)

    def refill_hand(self, p: Player) -> None:
        p.draw(self.HAND_SIZE - len(p.hand))

    def return_hand(self, p: Player) -> None:
        p.return_hand()

    def set_policies(self, policies: Sequence[Policy]) -> None:
        """Replace the seats' policies (scripted play, tests, mixing policy kinds)."""
        if len(policies) != self.N_PLAYERS:
            raise ValueError(f"need {self.N_PLAYERS} policies, got {len(policies)}")
        for agent, policy in zip(self.seats, policies, strict=True):
            agent.policy = policy
            policy.bind(agent)

    def _collapse(self) -> None:
        self.collapsed = True
        self.collapse_round = self.round
        self.game_over = True
        self.survived = False
        self.winners = []
        self.running = False

    # -- phases -----------------------------------------------------------
    def phase_new_round(self) -> None:
        """Reset coins and round effects, refill hands, apply wear and tear."""
        self.effects = RoundEffects()
        self.events_round = []
        self.ongoing_shown = []
        self.extra_draws = 0
        self.pending_forced = []
        self.n_events = 0
        self.meeting_held = False
        self.meeting_conversation = None
        self.meeting_summaries = {}
        self.pledges = None
        self.market = None
        self.round_offers = []
        self.seats.do(
            "start_round", self.COINS_PER_ROUND, self.HAND_SIZE if self.round > 1 else None
        )
        self.change_health(-self.WEAR)
        self.health_after_wear = self.health
        if self.health <= 0:
            self._collapse()

    def phase_events(self) -> None:
        """Sandstorm repeats, then 1-3 new events (plus Murphy's Law extras), then deferred effects."""
        if self.round == 1 and not self.p.events_in_first_round:
            return
        self.n_events = self.events_count(self.health)
        self.ongoing_shown = apply_ongoing(self)
        to_draw = self.n_events
        while to_draw > 0 and self.health > 0:  # a collapsed port asks nobody anything
            card = self.event_deck.draw()
            self.events_round.append(card)
            self.event_counts[card.id] += 1
            self.events_drawn_total += 1
            resolve_event(self, card)
            to_draw -= 1
            to_draw += self.extra_draws
            self.extra_draws = 0
        if self.health > 0:
            resolve_deferred(self)
        self.seats.do("forget_lost_goal")
        if self.health <= 0:
            self._collapse()

    def phase_meeting(self) -> None:
        """The round's planning meeting (:mod:`.meeting`), unless off or silenced."""
        self.meeting_health = self.health
        if not self.p.meeting or self.effects.chat_closed or self.broker.narrator is None:
            return
        run_meeting(self)

    def phase_planning(self) -> None:
        """Health plans, then accomplishment goals (each phase's decisions asked at once)."""
        decisions, who = [], []
        for p in self.seats:
            if p.seat in self.effects.forced_full_health or p.coins <= 0:
                p.health_plan = p.coins if p.seat in self.effects.forced_full_health else 0
                continue
            who.append(p)
            decisions.append(
                self.decision(
                    p.seat,
                    "port_of_mars.health_plan",
                    NumberSpec(0, p.coins, integer=True),
                    p.coins // 2,
                    shown=shown_coins(self.MAX_COINS),
                )
            )
        for p, plan in zip(who, self.ask_all(decisions), strict=True):
            p.health_plan = int(plan)

        decisions, who = [], []
        for p in self.seats:
            if not p.hand:
                p.goal = None
                continue
            names = tuple(dict.fromkeys(c.name for c in p.hand))
            fallback = p.goal if p.goal in names else names[0]
            question = (
                f" You are working towards {p.goal}: keep it, or switch to another card."
                if p.goal in names
                else ""
            )
            who.append(p)
            decisions.append(
                self.decision(
                    p.seat,
                    "port_of_mars.goal_plan",
                    ChoiceSpec(names),
                    fallback,
                    shown=shown_card(),
                    goal_question=question,
                )
            )
        for p, goal in zip(who, self.ask_all(decisions), strict=True):
            p.goal = goal

    def invest_fallback(self, p: Player, costs: dict[str, int]) -> dict[str, int]:
        """The plan's coins to port health, the rest to the cheapest resource the seat can buy."""
        hc = costs["port_health"]
        units = min(p.health_plan if p.health_plan is not None else p.coins // 2, p.coins) // hc
        out = {"port_health": units}
        left = p.coins - units * hc
        buyable = {r: c for r, c in costs.items() if r != "port_health"}
        if buyable:
            spec = self.role_spec(p.seat).specialty
            r = spec if spec in buyable else min(buyable, key=lambda k: (buyable[k], k))
            if left // buyable[r]:
                out[r] = left // buyable[r]
        return out

    def phase_investment(self) -> None:
        """Coins to port health (credited at round end) and to resources (credited now)."""
        decisions, who, all_costs = [], [], []
        hc = self.health_cost()
        for p in self.seats:
            if p.coins <= 0:
                continue
            if p.seat in self.effects.forced_full_health:
                units = p.coins // hc
                p.invest({"port_health": units}, {"port_health": hc})
                continue
            costs = {"port_health": hc, **self.coin_costs(p.seat)}
            who.append(p)
            all_costs.append(costs)
            decisions.append(
                self.decision(
                    p.seat,
                    "port_of_mars.invest",
                    budget_spec(costs, p.coins),
                    self.invest_fallback(p, costs),
                    shown=shown_spend(self.MAX_COINS),
                )
            )
        for p, costs, alloc in zip(who, all_costs, self.ask_all(decisions), strict=True):
            p.invest(alloc, costs)

    def phase_trading(self) -> None:
        """Offers from everyone at once, then each recipient answers in turn (random order)."""
        if self.effects.trade_closed or self.p.max_offers == 0:
            return
        shown_offers = ListSpec(shown_offer_spec(self.roles), max_items=self.p.max_offers)
        for _ in range(self.p.trade_rounds):
            decisions = []
            for p in self.seats:
                partners = [r for r in self.roles if r != p.role]
                spec = ListSpec(offer_spec(partners, p.resources), max_items=self.p.max_offers)
                decisions.append(
                    self.decision(
                        p.seat,
                        "port_of_mars.trade_offer",
                        spec,
                        [],
                        shown=shown_offers,
                        partners=", ".join(partners),
                        holdings=bundle_text(p.resources),
                    )
                )
            offers: list[TradeOffer] = []
            for p, answer in zip(self.seats, self.ask_all(decisions), strict=True):
                for item in answer:
                    offer = TradeOffer(
                        sender=p.seat,
                        recipient=self.roles.index(item["to"]),
                        give=item["give"],
                        receive=item["receive"],
                        round=self.round,
                    )
                    p.trades_proposed[offer.kind] += 1
                    offers.append(offer)
            inventories = [p.resources for p in self.seats]
            for i in self.rng.permutation(len(offers)):
                offer = offers[int(i)]
                sender, recipient = self.player(offer.sender), self.player(offer.recipient)
                if not all(sender.resources[r] >= n for r, n in offer.give.items()):
                    offer.status = "failed"
                else:
                    recipient.trades_received += 1
                    answer = self.ask(
                        self.decision(
                            recipient.seat,
                            "port_of_mars.trade_accept",
                            ChoiceSpec(("yes", "no")),
                            "no",
                            offer=offer.public(self.roles),
                            offer_text=text.offer_text(offer.public(self.roles)),
                        )
                    )
                    if answer == "yes":
                        offer.status = "accepted" if execute(offer, inventories) else "failed"
                    else:
                        offer.status = "rejected"
                    if offer.status == "accepted":
                        sender.trades_accepted[offer.kind] += 1
                        recipient.trades_received_accepted += 1
                    elif offer.status == "rejected":
                        recipient.trades_received_rejected += 1
                self.round_offers.append(offer)
                self.trades.append(offer)
            if not offers:
                break

    def phase_purchase(self) -> None:
        """Each player buys any affordable accomplishments in hand (dirty ones cost port health)."""
        decisions, who = [], []
        for p in self.seats:
            affordable = tuple(dict.fromkeys(c.name for c in p.hand if c.affordable(p.resources)))
            if not affordable:
                continue
            who.append(p)
            spec = ListSpec(ChoiceSpec(affordable), max_items=len(affordable))
            decisions.append(
                self.decision(
                    p.seat,
                    "port_of_mars.purchase",
                    spec,
                    [],
                    shown=shown_cards(self.HAND_SIZE),
                    options_text=", ".join(affordable),
                )
            )
        for p, names in zip(who, self.ask_all(decisions), strict=True):
            p.purchase(names)

    def phase_discard(self) -> None:
        """Players may return unpurchased accomplishments to the bottom of their deck."""
        who = self.seats.select(lambda p: bool(p.hand))
        decisions = []
        for p in who:
            names = tuple(dict.fromkeys(c.name for c in p.hand))
            decisions.append(
                self.decision(
                    p.seat,
                    "port_of_mars.discard",
                    ListSpec(ChoiceSpec(names), max_items=len(names)),
                    [],
                    shown=shown_cards(self.HAND_SIZE),
                )
            )
        for p, names in zip(who, self.ask_all(decisions), strict=True):
            p.discard(names)

    def phase_end_round(self) -> None:
        """Credit port-health investments, charge dirty accomplishments, check the end."""
        last = self.round >= self.n_rounds_total
        seats = self.seats
        invested = sum(seats.get("health_units_round"))
        dirty = sum(seats.get("dirty_cost_round"))
        if not last or self.p.settle_final_round:
            self.change_health(invested - dirty)
        seats.do("close_round")
        self.health_history.append(self.health)
        self.last_round = {
            "round": self.round,
            "port_health_coins_total": sum(seats.get("health_coins_round")),
            "port_health_lost_to_accomplishments": dirty,
            "port_health_at_end": self.health,
            "events": [e["name"] for e in self.round_events_public()],
            "trades": [o.public(self.roles) for o in self.round_offers if o.status == "accepted"],
            "meeting_summaries": dict(self.meeting_summaries),
        }
        if self.health <= 0:
            self._collapse()
        elif last:
            self.game_over = True
            self.survived = True
            self.running = False
            best = max(seats.get("points"))
            self.winners = seats.select(lambda p: p.points == best).get("seat")

    def end_of_round(self) -> None:
        if self.collapsed:
            # the rounds a collapsed game never played still count as 0 coins to port health
            self.seats.select(lambda p: len(p.health_coins_by_round) < self.round).do("close_round")
            if len(self.health_history) < self.round:
                self.health_history.append(self.health)
        super().end_of_round()


__all__ = ["Player", "PomPlayer", "PortOfMarsModel"]
