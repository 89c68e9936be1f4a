"""What OpenAI's model names say about the parameters a model takes (no SDK import)."""

from __future__ import annotations

import re

#: OpenAI's reasoning models: no temperature/top_p, max_completion_tokens, reasoning_effort
_REASONING = re.compile(r"^(o\d|gpt-5)(?!-chat)")


def is_reasoning_model(model: str) -> bool:
    """gpt-5*, o1/o3/o4* (not gpt-5-chat): models that take ``reasoning_effort`` and no
    sampling temperature."""
    return bool(_REASONING.match(model.rsplit("/", 1)[-1]))
