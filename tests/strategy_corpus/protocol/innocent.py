"""Well-behaved strategies (the set the attacks play against)."""

from mesa_dilemmas.dilemmas.binary.strategies import Strategy

NAME = "innocent"


class Generous(Strategy):
    def act(self, history):
        return "C"


class Reciprocal(Strategy):
    def act(self, history):
        if history.is_first_round:
            return "C"
        return "C" if history.last_opponent_cooperators >= 1 else "D"


class Alternator(Strategy):
    def act(self, history):
        return "C" if history.round_number % 2 == 0 else "D"
