"""Our own Common Pool strategies in the paper-era format (``CommonPoolState``), for tests."""

from emergent_llm.common import Action, C, D, PlayerHistory
from emergent_llm.games import CommonPoolDescription, CommonPoolState
from emergent_llm.players import BaseStrategy


class Strategy_COLLECTIVE_1(BaseStrategy):
    """Cooperate while the stock is above a third of the capacity."""

    def __init__(self, game_description: CommonPoolDescription):
        self.capacity = game_description.capacity

    def __call__(self, state: CommonPoolState, history: None | PlayerHistory) -> Action:
        return C if state.current_stock > self.capacity / 3 else D


class Strategy_EXPLOITATIVE_1(BaseStrategy):
    """Defect while the stock is high, and whenever any opponent defected last round."""

    def __init__(self, game_description: CommonPoolDescription):
        self.game_description = game_description

    def __call__(self, state: CommonPoolState, history: None | PlayerHistory) -> Action:
        if history is not None and not history.opponent_actions[-1].all():
            return D
        return D if state.current_stock > 0.9 * self.game_description.capacity else C
