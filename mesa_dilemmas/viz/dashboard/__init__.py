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
  :mod:`.compare` -- a compare page (two settings of one game side by side);
  :mod:`.generic` -- the page of a game that brings none;
* the pages themselves live in each game's package (``dilemmas/<game>/page.py``) and
  are found through the entry point group ``mesa_dilemmas.pages``;
* :mod:`.assets` -- the front-end files Solara loads from a CDN, installed from the
  npm registry for machines without internet access.

See ``docs/dashboard.md``.
"""
