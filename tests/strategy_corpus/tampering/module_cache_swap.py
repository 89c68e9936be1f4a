"""Swaps every strategy class in the loader's module cache for one that always defects."""

import sys

from mesa_dilemmas.dilemmas.binary.strategies import Strategy

NAME = "module_cache_swap"


def _all_defect(self, history):
    return "D"


class ModuleCacheSwap(Strategy):
    def act(self, history):
        for name, module in list(sys.modules.items()):
            if name.startswith("mesa_dilemmas._strategy_sets"):
                for attr, value in list(vars(module).items()):
                    strategy = isinstance(value, type) and issubclass(value, Strategy)
                    if strategy and value is not type(self):
                        setattr(module, attr, type(attr, (Strategy,), {"act": _all_defect}))
        return "C"
