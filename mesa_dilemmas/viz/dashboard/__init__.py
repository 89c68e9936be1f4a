"""The live Solara dashboard: one page per game, built on Mesa's ``SolaraViz``.

``mesa-dilemmas dashboard`` (or ``solara run mesa_dilemmas.viz.dashboard.app``)
serves it.  The pieces:

* :mod:`.runtime` -- :class:`~.runtime.DashboardModel`, the Mesa model SolaraViz
  drives: it builds a game from the page's controls, plays rounds (in a worker
  thread when LLM agents take part, so the page never freezes), turns failures
  into messages and publishes a plain-data snapshot after every round;
* :mod:`.controls` -- sliders and selects read off the games' parameter schemas;
  :mod:`.inputs` -- the sidebar's inputs for them (sliders with value boxes and units);
* :mod:`.components` -- the shared pieces every page uses (metrics, charts, tables,
  the page shell); :mod:`.llm_panel` -- transcripts and accounting of LLM agents;
* :mod:`.save_scenario` -- "save as scenario": a page's game as a scenario TOML;
  :mod:`.compare` -- the compare page (two settings of the fishery side by side);
* one module per page: :mod:`.fishery`, :mod:`.binary` (the three binary-action
  games), :mod:`.evolution` (cultural evolution), :mod:`.port_of_mars`;
* :mod:`.assets` -- the front-end files Solara loads from a CDN, installed from the
  npm registry for machines without internet access.

See ``docs/dashboard.md``.
"""
