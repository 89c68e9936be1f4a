"""mesa-dilemmas: social dilemmas on Mesa where rule-based and LLM-backed agents play side by side."""

__version__ = "0.1.0"
