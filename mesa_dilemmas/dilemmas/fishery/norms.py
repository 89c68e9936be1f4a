"""The fishery's norms in words: the canonical sentence of a numeric cap, and reading the
harvest cap a text policy states (the votes themselves are :mod:`mesa_dilemmas.dilemmas.voting`)."""

from __future__ import annotations

import re


def cap_sentence(cap: float) -> str:
    """The canonical wording of a numeric harvest cap as a shared policy."""
    return f"Each villager should harvest at most {float(cap):.2f} fish per day."


# -- reading the harvest cap a text policy states ---------------------------------------------
#
# G is a per-villager harvest threshold in fish.  A policy may mention many numbers that are not
# that cap: head counts ("each of the 10 villagers"), efforts ("keep effort at 0.6"), shares
# ("20% less"), stock levels ("while the lake holds over 150 fish"), food needs ("eat 2 fish"),
# village totals, or changes ("2 fish fewer than yesterday").  ``stated_cap`` keeps only
# quantities that read as one villager's harvest and returns their value when exactly one
# distinct value remains; otherwise (none, or several different caps) it returns None and the
# model keeps the previous G.

_WORD_NUMBERS = {
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "fifteen": 15,
    "twenty": 20,
}
_NUM = r"(?:\d+(?:\.\d+)?|\.\d+|" + "|".join(_WORD_NUMBERS) + r")"
# a number, or a range "4-6" / "4 to 6" / "between 4 and 6" (the range's upper end is the cap)
_QUANTITY = re.compile(
    rf"(?<![\w./])(?:between\s+)?(?P<low>{_NUM})(?:\s*(?:-|–|to|and)\s*(?P<high>{_NUM}))?(?![\w])",
    re.IGNORECASE,
)
_FISH_AFTER = re.compile(
    r"\s*(?:more\s+|extra\s+|additional\s+)?(?:fish(?:es)?|units?\s+of\s+fish)\b"
)
_PERCENT_AFTER = re.compile(r"\s*(?:%|percent|per\s*cent)")
_COUNT_AFTER = re.compile(
    r"\s*(?:villagers?|people|persons?|members?|fishers?|fishermen|households?|families|days?|"
    r"rounds?|steps?|times?|weeks?|months?|years?|seasons?|generations?|turns?)\b"
)
_RELATIVE_AFTER = re.compile(r"\s*(?:fish\s+)?(?:fewer|less|more)\s+(?:fish\s+)?than\b")
_RELATIVE_BEFORE = re.compile(r"\b(?:by|extra|additional|another)\s*$")
_EFFORT_BEFORE = re.compile(r"\beffort\b(?:\s+\S+){0,4}\s*$")
_STOCK_BEFORE = re.compile(
    r"\b(?:lake|stock|pond|population|fish\s+count|reserve|remain\w*|left|at\s+least|minimum\s+of|"
    r"above|recover\w*|drops?|falls?|exceeds?|reach\w*)\b(?:\s+\S+){0,4}\s*$"
)
_EAT_BEFORE = re.compile(r"\b(?:eat\w*|consum\w*|need\w*|survive)\b(?:\s+\S+){0,3}\s*$")
_TOTAL_CONTEXT = re.compile(
    r"\b(?:total|in\s+all|altogether|combined|together|collectively|whole\s+(?:village|community))\b"
)
_LIMIT_BEFORE = re.compile(
    r"\b(?:at\s+most|no\s+more\s+than|not\s+more\s+than|more\s+than|up\s+to|maximum(?:\s+of)?|max|"
    r"limit\w*(?:\s+\S+){0,3}\s+to|cap\w*(?:\s+of|\s+at)?|quota(?:\s+of)?|under|below|less\s+than|"
    r"fewer\s+than|exceed\w*|beyond|over|only|just|about|around|roughly)\s*$"
)
_HARVEST_BEFORE = re.compile(
    r"\b(?:catch\w*|harvest\w*|fish|fishing|take|taking|takes|land|haul\w*)\b(?:\s+\S+){0,5}\s*$"
)
_NOT_FISH_AFTER = re.compile(r"\s*(?:/|of\b|\w*\s*effort|intensity|rate|level|x\b|times\b)")
_CLAUSE_END = re.compile(r"[;!?]|\.(?:\s|$)")
_CONDITIONAL_BEFORE = re.compile(
    r"\b(?:if|when|whenever|once|until|unless|while)\b(?:\s+\S+){0,4}\s*$"
)


def _clause(text: str, start: int, end: int) -> str:
    """The clause (between semicolons / sentence ends) around text[start:end]."""
    begin = max((m.end() for m in _CLAUSE_END.finditer(text, 0, start)), default=0)
    stop = _CLAUSE_END.search(text, end)
    return text[begin : stop.start() if stop else len(text)]


def _number(token: str) -> float:
    word = token.lower()
    return float(_WORD_NUMBERS[word]) if word in _WORD_NUMBERS else float(token)


def harvest_caps(text: str) -> list[float]:
    """Every quantity in ``text`` that reads as one villager's harvest in fish (a cap or target),
    in order of appearance; see :func:`stated_cap`."""
    lowered = " ".join(text.lower().split())
    caps = []
    for match in _QUANTITY.finditer(lowered):
        before = lowered[max(0, match.start() - 60) : match.start()]
        after = lowered[match.end() : match.end() + 40]
        if _PERCENT_AFTER.match(after) or _COUNT_AFTER.match(after) or _RELATIVE_AFTER.match(after):
            continue
        fish = bool(_FISH_AFTER.match(after))
        if _RELATIVE_BEFORE.search(before) or _EAT_BEFORE.search(before):
            continue
        if _STOCK_BEFORE.search(before) or _CONDITIONAL_BEFORE.search(before):
            continue
        if _EFFORT_BEFORE.search(before) and not fish:
            continue
        if not fish:  # no unit: only "catch at most 3 (per day)" -- a harvest verb and a limit word
            if not (_HARVEST_BEFORE.search(before) and _LIMIT_BEFORE.search(before)):
                continue
            if _NOT_FISH_AFTER.match(after):
                continue
        if _TOTAL_CONTEXT.search(_clause(lowered, match.start(), match.end())):
            continue  # a village-wide total is not a per-villager cap
        value = _number(match.group("high") or match.group("low"))
        caps.append(value)
    return caps


def stated_cap(text: str) -> float | None:
    """The per-villager harvest cap, in fish, that a policy states; None when it states none or
    several different ones (the caller keeps its previous cap).

    Head counts, efforts, percentages, stock levels, food needs, village totals, changes
    ("2 fewer than") and conditions ("if the lake drops below 100 fish") are not caps; a range
    "4-6 fish" states the cap 6."""
    caps = set(harvest_caps(text))
    return caps.pop() if len(caps) == 1 else None
