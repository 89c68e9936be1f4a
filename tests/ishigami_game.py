"""A test-only game whose one run metric is the Ishigami function of its parameters
(``game = "tests.ishigami_game:IshigamiModel"``): the known answer for the sensitivity command.

Y = sin x1 + a sin^2 x2 + b x3^4 sin x1 with a = 7, b = 0.1 and x ~ U(-pi, pi)^3 has the
analytic Sobol indices S1 = (0.3139, 0.4424, 0), ST = (0.5576, 0.4424, 0.2437)."""

from __future__ import annotations

import math
from typing import Annotated, Any, ClassVar

import mesa
from pydantic import Field

Angle = Annotated[float, Field(ge=-math.pi, le=math.pi)]

A, B = 7.0, 0.1
V = A**2 / 8 + B * math.pi**4 / 5 + B**2 * math.pi**8 / 18 + 0.5
V1 = 0.5 * (1 + B * math.pi**4 / 5) ** 2
V2 = A**2 / 8
V13 = B**2 * math.pi**8 * (1 / 18 - 1 / 50)
S1 = (V1 / V, V2 / V, 0.0)
ST = ((V1 + V13) / V, V2 / V, V13 / V)


class IshigamiModel(mesa.Model):
    RUN_METRICS: ClassVar[tuple[str, ...]] = ("y",)

    def __init__(self, *, x1: Angle = 0.0, x2: Angle = 0.0, x3: Angle = 0.0, rng: Any = None):
        super().__init__(rng=rng)
        self.x = (x1, x2, x3)
        self.y = math.nan
        self.datacollector = mesa.DataCollector(model_reporters={"y": "y"})
        self.datacollector.collect(self)

    def step(self) -> None:
        x1, x2, x3 = self.x
        self.y = math.sin(x1) + A * math.sin(x2) ** 2 + B * x3**4 * math.sin(x1)
        self.running = False
        self.datacollector.collect(self)
