"""A plain user page, as a Mesa user writes one: ``SolaraViz`` with Mesa's own plot component.

Served by the browser tests (``solara run tests/dashboard_user_page.py``) to check that
Mesa's standard component area works in this package's environment.
"""

from mesa.visualization import SolaraViz, make_plot_component

from mesa_dilemmas.dilemmas.fishery import FisheryModel

model = FisheryModel(rng=42)
page = SolaraViz(model, components=[make_plot_component("stock")], name="my fishery")
