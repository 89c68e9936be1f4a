"""Gymnasium spaces from the platform's answer specs, and observations as numbers.

A decision kind an RL seat controls gets one fixed action space, derived from the specs the
kind was asked with (recorded in a probe episode, :mod:`.env`).  A :class:`Codec` holds that
space and turns an action from it into an answer to the decision *as asked this time* (the
seat's own spec: its coins, its options), so every action the space can sample is a valid
answer:

====================================  ============================================================
specs of the kind (every one seen)    action space and meaning
====================================  ============================================================
``ChoiceSpec``, the same options      ``Discrete(len(options))``: the index of the option
``NumberSpec``, integer, same bounds  ``Discrete(high - low + 1)`` (at most 101 values): the
                                      number minus ``low``
``NumberSpec``, same bounds           ``Box(low, high, (1,))``: the number
``NumberSpec``, bounds that vary      ``Box(0, 1, (1,))``: the share of the seat's own range
                                      (``low + share * (high - low)``, rounded down when whole)
a budget (``StructSpec`` of whole     ``Box(0, 1, (fields,))`` over every field seen: each
numbers with ``budget`` and           field's share of the budget (shares summing above 1 are
``costs``, e.g. an investment)        scaled down), bought in whole units at its cost
``StructSpec`` of the above, same     ``Dict`` of the fields' spaces
fields
anything else (free text, lists,      not controlled: the seat's rule player (or, in games
options that differ by seat)          without one, the decision's documented fallback) answers
====================================  ============================================================

Observations: the numbers of a decision's observation (``"coins": 7``, ``"stock": 210.5``),
one level of nested mappings (``"resources.culture"``), and the last value of a list of numbers
(``"opponent_cooperators[-1]"``), and short texts as categories: ``"last_stag_hunt=caught"`` is 1
when the value is "caught" (one feature per value the probe saw, for keys with at most
:data:`MAX_CATEGORIES` values); longer text and other objects are not observed.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from gymnasium import spaces

from mesa_dilemmas.agents.decisions import AnswerSpec, ChoiceSpec, NumberSpec, StructSpec

#: an integer NumberSpec with at most this many values is a Discrete space
MAX_DISCRETE = 101
#: a short text value is a category (one feature ``"key=value"`` per value seen in the probe)
MAX_CATEGORY_CHARS = 40
#: ... when its key took at most this many values in the probe
MAX_CATEGORIES = 12


class Codec:
    """One decision kind's action space and its decoding into an answer."""

    space: spaces.Space
    #: what the action means, for the docs and ``env.controls()``
    meaning: str = ""

    def decode(self, action: Any, spec: AnswerSpec) -> Any:  # pragma: no cover - interface
        raise NotImplementedError


class ChoiceCodec(Codec):
    def __init__(self, options: tuple[str, ...]) -> None:
        self.options = options
        self.space = spaces.Discrete(len(options))
        self.meaning = "index into " + ", ".join(options)

    def decode(self, action: Any, spec: AnswerSpec) -> Any:
        return self.options[int(action)]


class IntegerCodec(Codec):
    def __init__(self, low: int, high: int) -> None:
        self.low = low
        self.space = spaces.Discrete(high - low + 1, start=0)
        self.meaning = f"a whole number from {low} to {high} (action + {low})"

    def decode(self, action: Any, spec: AnswerSpec) -> Any:
        return self.low + int(action)


class NumberCodec(Codec):
    def __init__(self, low: float, high: float) -> None:
        self.low, self.high = low, high
        self.space = spaces.Box(np.float32(low), np.float32(high), shape=(1,), dtype=np.float32)
        self.meaning = f"a number from {low} to {high}"

    def decode(self, action: Any, spec: AnswerSpec) -> Any:
        value = float(np.asarray(action, dtype=np.float64).reshape(-1)[0])
        return min(self.high, max(self.low, value))


class ShareCodec(Codec):
    """A number whose bounds differ by seat or round: the share of the range as asked."""

    def __init__(self) -> None:
        self.space = spaces.Box(0.0, 1.0, shape=(1,), dtype=np.float32)
        self.meaning = "the share (0..1) of the range allowed this time"

    def decode(self, action: Any, spec: AnswerSpec) -> Any:
        assert isinstance(spec, NumberSpec)
        share = min(1.0, max(0.0, float(np.asarray(action, dtype=np.float64).reshape(-1)[0])))
        value = spec.low + share * (spec.high - spec.low)
        if spec.integer:
            return int(min(spec.high, max(spec.low, math.floor(value))))
        return min(spec.high, max(spec.low, value))


class BudgetCodec(Codec):
    """Whole units of several goods bought within a budget: each good's share of it."""

    def __init__(self, names: Sequence[str], unit: str = "coins") -> None:
        self.names = tuple(names)
        self.space = spaces.Box(0.0, 1.0, shape=(len(self.names),), dtype=np.float32)
        self.meaning = f"share of the budget ({unit}) given to each of " + ", ".join(self.names)

    def decode(self, action: Any, spec: AnswerSpec) -> Any:
        shares = np.clip(np.asarray(action, dtype=np.float64).reshape(-1), 0.0, 1.0)
        scale = max(1.0, float(shares.sum()))
        budget = int(spec.budget)  # type: ignore[attr-defined]
        costs = spec.costs  # type: ignore[attr-defined]
        out: dict[str, int] = {}
        for name, share in zip(self.names, shares, strict=True):
            if name not in spec.fields:  # type: ignore[attr-defined]
                continue
            price = max(1, int(costs.get(name, 1)))
            out[name] = int(math.floor(share / scale * budget / price))
        return out


class StructCodec(Codec):
    def __init__(self, fields: Mapping[str, Codec]) -> None:
        self.fields = dict(fields)
        self.space = spaces.Dict({k: c.space for k, c in self.fields.items()})
        self.meaning = "; ".join(f"{k}: {c.meaning}" for k, c in self.fields.items())

    def decode(self, action: Any, spec: AnswerSpec) -> Any:
        assert isinstance(spec, StructSpec)
        return {k: c.decode(action[k], spec.fields[k]) for k, c in self.fields.items()}


def _is_budget(spec: AnswerSpec) -> bool:
    return (
        isinstance(spec, StructSpec)
        and hasattr(spec, "budget")
        and hasattr(spec, "costs")
        and all(isinstance(f, NumberSpec) and f.integer for f in spec.fields.values())
    )


def codec_for(specs: Sequence[AnswerSpec]) -> Codec | None:
    """The codec of a decision kind asked with ``specs`` (every spec seen), or None when an RL
    seat cannot answer it through a fixed space (text, lists, options that differ)."""
    if not specs:
        return None
    first = specs[0]
    same = all(s == first for s in specs)
    if all(type(s) is ChoiceSpec for s in specs):
        return ChoiceCodec(first.options) if same else None  # type: ignore[attr-defined]
    if all(type(s) is NumberSpec for s in specs):
        assert isinstance(first, NumberSpec)
        if not same:
            return ShareCodec()
        if not (math.isfinite(first.low) and math.isfinite(first.high)):
            return None
        if first.integer and first.high - first.low + 1 <= MAX_DISCRETE:
            return IntegerCodec(int(first.low), int(first.high))
        if first.integer:
            return ShareCodec()
        return NumberCodec(float(first.low), float(first.high))
    if all(_is_budget(s) for s in specs):
        names: dict[str, None] = {}
        for s in specs:
            names.update(dict.fromkeys(s.fields))  # type: ignore[attr-defined]
        return BudgetCodec(list(names), str(getattr(first, "unit", "coins")))
    if all(type(s) is StructSpec for s in specs) and same:
        assert isinstance(first, StructSpec)
        if first.optional:
            return None
        fields = {k: codec_for([f]) for k, f in first.fields.items()}
        if any(c is None for c in fields.values()):
            return None
        return StructCodec(fields)  # type: ignore[arg-type]
    return None


# -- observations ------------------------------------------------------------------------------


def _number(value: Any) -> float | None:
    if isinstance(value, bool | np.bool_):
        return float(value)
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        v = float(value)
        return v if math.isfinite(v) else 0.0
    return None


def _last_number(value: Any) -> float | None:
    if isinstance(value, np.ndarray):
        if value.ndim != 1 or value.size == 0:
            return None
        return _number(value[-1].item())
    if isinstance(value, list | tuple) and value:
        return _number(value[-1])
    return None


def numbers_of(observation: Mapping[str, Any]) -> dict[str, float]:
    """The numbers of a decision's observation, by key (see the module's docstring)."""
    out: dict[str, float] = {}
    for key in observation:
        try:
            value = observation[key]
        except (KeyError, TypeError, ValueError, IndexError):
            continue
        number = _number(value)
        if number is not None:
            out[str(key)] = number
            continue
        if isinstance(value, Mapping):
            for sub, inner in value.items():
                n = _number(inner)
                if n is not None:
                    out[f"{key}.{sub}"] = n
            continue
        if isinstance(value, str) and 0 < len(value) <= MAX_CATEGORY_CHARS:
            out[f"{key}={value}"] = 1.0
            continue
        last = _last_number(value)
        if last is not None:
            out[f"{key}[-1]"] = last
    return out


def categories(keys: set[str]) -> set[str]:
    """The one-hot keys (``"key=value"``) to drop: those of a key with more than
    :data:`MAX_CATEGORIES` values (free text, not a category)."""
    by_key: dict[str, list[str]] = {}
    for k in keys:
        if "=" in k:
            by_key.setdefault(k.split("=", 1)[0], []).append(k)
    return {k for group in by_key.values() if len(group) > MAX_CATEGORIES for k in group}
