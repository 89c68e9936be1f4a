"""The C/D family's experiments, named by scenarios through the entry point group
``mesa_dilemmas.experiments``: :mod:`.self_play` (paper 002's self-play over two strategy
sets), :mod:`.cultural_evolution` (its evolution of strategy-set genes) and
:mod:`.strategy_writing` (LLM-written strategy sets; ``mesa-dilemmas strategies generate``)."""
