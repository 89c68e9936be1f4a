"""Our own Common Pool strategies in the current format (``__call__(history, current_stock)``)."""

from emergent_llm.common import Action, C, D, PlayerHistory
from emergent_llm.games import CommonPoolDescription
from emergent_llm.players import BaseStrategy


class Strategy_COLLECTIVE_1(BaseStrategy):
    """Cooperate while the stock is above a third of the capacity."""

    def __init__(self, game_description: CommonPoolDescription):
        self.capacity = game_description.capacity

    def __call__(self, history: PlayerHistory, current_stock: float) -> Action:
        return C if current_stock > self.capacity / 3 else D


class Strategy_SELFISH_1(BaseStrategy):
    """Defect while the stock is high or an opponent defected last round."""

    def __init__(self, game_description: CommonPoolDescription):
        self.game_description = game_description

    def __call__(self, history: PlayerHistory, current_stock: float) -> Action:
        n = self.game_description.n_players
        if history.round_number and history.opponent_cooperators[-1] < n - 1:
            return D
        return D if current_stock > 0.9 * self.game_description.capacity else C
