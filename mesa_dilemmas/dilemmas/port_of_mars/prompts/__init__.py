"""Prompt templates of Port of Mars players, as data: one ``<kind>.toml`` per decision kind
(registered as ``port_of_mars.<kind>``), and ``parts/`` with the shared pieces the game renders
into every observation (the rules, the persona texts, the leadership notices).

All wording is ours; it carries the information paper 001 gives its players, not its sentences.
Replace any file per scenario with ``[llm] templates_dir = "my_prompts/"`` holding files named
``port_of_mars.<kind>.toml`` (e.g. with the paper's exact wording).
"""

from pathlib import Path

PROMPTS_DIR = Path(__file__).parent
PARTS_DIR = PROMPTS_DIR / "parts"
