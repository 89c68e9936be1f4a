"""Our own strategies in the paper-era published format (``__call__(state, history)``), for tests."""

from emergent_llm.common import Action, C, D, GameState, PlayerHistory
from emergent_llm.games import PublicGoodsDescription
from emergent_llm.players import BaseStrategy


class Strategy_COLLECTIVE_1(BaseStrategy):
    """Cooperate while at least half the opponents did last round."""

    def __init__(self, game_description: PublicGoodsDescription):
        self.game_description = game_description

    def __call__(self, state: GameState, history: None | PlayerHistory) -> Action:
        if history is None:
            return Action.C
        return C if history.opponent_actions[-1].mean() >= 0.5 else D


class Strategy_COLLECTIVE_2(BaseStrategy):
    """Counts cooperation with Action arithmetic; marks the history object (it is new every round)."""

    def __init__(self, game_description: PublicGoodsDescription):
        self.game_description = game_description

    def __call__(self, state: GameState, history: None | PlayerHistory) -> Action:
        if history is None:
            return C
        history.seen = getattr(history, "seen", 0) + 1  # a fresh object each round: always 1
        mine = sum(Action.C if a else Action.D for a in history.my_actions)
        return C if mine + history.seen >= state.round_number else D


class Strategy_COLLECTIVE_3(BaseStrategy):
    """Fails in round 2 (index error): the collective fallback is C."""

    def __init__(self, game_description: PublicGoodsDescription):
        self.game_description = game_description

    def __call__(self, state: GameState, history: None | PlayerHistory) -> Action:
        if state.round_number == 2:
            return [C][5]
        return D


class Strategy_EXPLOITATIVE_1(BaseStrategy):
    """Defect unless everyone cooperated last round; defect in the last round."""

    def __init__(self, game_description: PublicGoodsDescription):
        self.game_description = game_description

    def __call__(self, state: GameState, history: None | PlayerHistory) -> Action:
        if state.round_number == self.game_description.n_rounds - 1:
            return D
        if history is None:
            return C
        return C if bool(history.opponent_actions[-1].all()) else D


class Strategy_EXPLOITATIVE_2(BaseStrategy):
    """Answers a string in round 1 (not an Action): the exploitative fallback is D."""

    def __init__(self, game_description: PublicGoodsDescription):
        self.game_description = game_description
        self.k = game_description.k

    def __call__(self, state: GameState, history: None | PlayerHistory) -> Action:
        if state.round_number == 1:
            return "C"
        if history is not None and history.my_payoffs.sum() < history.opponent_payoffs.sum(0).max():
            return D
        return Action.C if self.k > 1.5 else Action.D
