from mesa_dilemmas.dilemmas.binary.strategies import Strategy

NAME = "surrogate\udc80\ud800name"
DESCRIPTION = "lone surrogates \udcff everywhere"


class SurrogateText(Strategy):
    """Raises an error whose text holds lone surrogates (its flag's reason)."""

    description = "a \ud800 description"

    def act(self, history):
        if history.round_number == 2:
            raise ValueError("bad \udc80 text \ud800")
        return "C"


class SurrogateQuiet(Strategy):
    """Plays C; only its description holds lone surrogates."""

    description = "quiet \udfff"

    def act(self, history):
        return "C"
