"""Prompt templates of LLM villagers, one file per decision kind (the initial-strategy bank is
``../strategies.toml``).

Replace them per scenario with ``[llm] templates_dir = "my_prompts/"`` holding files of
the same names (``fishery.effort.toml`` ...) -- e.g. with the paper's exact wording.
"""
