"""A plain user page, as a Mesa user writes one: ``SolaraViz`` with Mesa's own plot component
and this package's fishery view beside it (the example of ``docs/dashboard.md``).

Served by the browser tests (``solara run tests/dashboard_user_page.py``) to check that
Mesa's standard component area works in this package's environment.
"""

from mesa.visualization import SolaraViz, make_plot_component

from mesa_dilemmas.dilemmas.fishery.agent_view import FisheryLake
from mesa_dilemmas.dilemmas.fishery.model import FisheryModel

model = FisheryModel(rng=42)
page = SolaraViz(model, components=[make_plot_component("stock"), FisheryLake], name="my fishery")
