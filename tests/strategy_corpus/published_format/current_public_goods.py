"""Our own strategies in the current published format (``__call__(history)``), for tests."""

from emergent_llm.common import Action, C, D, PlayerHistory
from emergent_llm.games import PublicGoodsDescription
from emergent_llm.players import BaseStrategy


class Strategy_COLLECTIVE_1(BaseStrategy):
    """Cooperate while at least half the opponents did last round."""

    def __init__(self, game_description: PublicGoodsDescription):
        self.game_description = game_description
        self.n = game_description.n_players

    def __call__(self, history: PlayerHistory) -> Action:
        if history.round_number == 0:
            return Action.C
        return C if 2 * history.opponent_cooperators[-1] >= self.n - 1 else D


class Strategy_PROSOCIAL_2(BaseStrategy):
    """Cooperates unless the group's cooperation fell; marks the history object."""

    def __init__(self, game_description: PublicGoodsDescription):
        self.game_description = game_description

    def __call__(self, history: PlayerHistory) -> Action:
        history.mark = True
        if len(history.opponent_cooperators) < 2:
            return C
        return D if history.opponent_cooperators[-1] < history.opponent_cooperators[-2] else C


class Strategy_SELFISH_1(BaseStrategy):
    """Defect, but cooperate after a round in which I earned less than 1.5; fails in round 3."""

    def __init__(self, game_description: PublicGoodsDescription):
        self.game_description = game_description

    def __call__(self, history: PlayerHistory) -> Action:
        if history.round_number == 3:
            raise ValueError("round three")
        if history.round_number and history.my_payoffs[-1] < 1.5:
            return C
        return D


class Strategy_OPPORTUNISTIC_2(BaseStrategy):
    """Cooperate on even rounds while I cooperated less than half the time."""

    def __init__(self, game_description: PublicGoodsDescription):
        self.game_description = game_description

    def __call__(self, history: PlayerHistory) -> Action:
        mine = history.my_actions.sum()
        if history.round_number % 2 == 0 and 2 * mine < history.round_number + 1:
            return C
        return D
