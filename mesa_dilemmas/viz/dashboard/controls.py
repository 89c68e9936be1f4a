"""Parameter controls for Mesa's SolaraViz, read off the games' parameter schemas.

A game's keyword parameters carry their constraints (``Annotated[float,
Field(ge=0, le=2)]``) and ``params_model`` turns them into pydantic fields; a
slider's range is the constraint, narrowed where the page asks for a sensible
window (``n_agents`` allows 1000 villagers, a slider stops at 50).  A page can
narrow a range but never widen it, so the dashboard cannot start a game with a
value the game would reject.  Literal parameters become selects, booleans
checkboxes.  The dicts returned are Mesa's user-input specs.
"""

from __future__ import annotations

import types
import typing
from typing import Any

import annotated_types
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from mesa_dilemmas.dilemmas.base import params_model
from mesa_dilemmas.viz.dashboard.llm_run import ANSWER_MODES, provider_names

#: a game's model class (its keyword parameters) or a pydantic options class (its fields)
Schema = type


def field_of(schema: Schema, name: str) -> FieldInfo:
    fields = (
        schema.model_fields if issubclass(schema, BaseModel) else params_model(schema).model_fields
    )
    if name not in fields:
        raise KeyError(f"{schema.__name__} has no parameter {name!r}")
    return fields[name]


def _base_type(annotation: Any) -> Any:
    """``int | None`` -> ``int``; other annotations unchanged."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return annotation


def constraint_range(info: FieldInfo) -> tuple[float | None, float | None, bool, bool]:
    """(low, high, low is exclusive, high is exclusive) from the field's constraints."""
    low = high = None
    low_open = high_open = False
    for c in info.metadata:
        if isinstance(c, annotated_types.Ge):
            low = c.ge
        elif isinstance(c, annotated_types.Gt):
            low, low_open = c.gt, True
        elif isinstance(c, annotated_types.Le):
            high = c.le
        elif isinstance(c, annotated_types.Lt):
            high, high_open = c.lt, True
    return low, high, low_open, high_open


def unit_of(model_cls: Schema, name: str, info: FieldInfo) -> str:
    """The parameter's unit, from its schema: ``Field(..., json_schema_extra={"unit": "fish"})``."""
    extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
    return str(extra.get("unit") or "")


def slider(
    model_cls: Schema,
    name: str,
    *,
    low: float | None = None,
    high: float | None = None,
    step: float | None = None,
    value: Any = None,
    label: str | None = None,
    unit: str | None = None,
) -> dict[str, Any]:
    """A slider over the parameter's allowed range, narrowed to [low, high] where given; its
    unit (shown beside the value) from ``unit`` or the schema (:func:`unit_of`)."""
    info = field_of(model_cls, name)
    kind = _base_type(info.annotation)
    if kind not in (int, float):
        raise TypeError(f"{name}: a slider needs an int or float parameter, not {info.annotation}")
    step = step if step is not None else (1 if kind is int else 0.01)
    c_low, c_high, low_open, high_open = constraint_range(info)
    if c_low is not None:
        c_low = c_low + step if low_open else c_low
        low = c_low if low is None else max(low, c_low)
    if c_high is not None:
        c_high = c_high - step if high_open else c_high
        high = c_high if high is None else min(high, c_high)
    if low is None or high is None:
        raise ValueError(f"{name}: the parameter is unbounded; give the slider low= and high=")
    if low > high:
        raise ValueError(f"{name}: empty slider range [{low}, {high}]")
    default = info.default if value is None else value
    if default is None:
        raise ValueError(f"{name}: no default value; give value=")
    default = min(max(default, low), high)
    cast = int if kind is int else float
    spec = {
        "type": "SliderInt" if kind is int else "SliderFloat",
        "label": label or name.replace("_", " "),
        "value": cast(default),
        "min": cast(low),
        "max": cast(high),
        "step": cast(step),
    }
    unit = unit_of(model_cls, name, info) if unit is None else unit
    return _described({**spec, "unit": unit} if unit else spec, info)


def _described(spec: dict[str, Any], info: FieldInfo) -> dict[str, Any]:
    """The spec with the parameter's description (the input's tooltip), when it has one."""
    return {**spec, "description": info.description} if info.description else spec


def select(model_cls: Schema, name: str, *, label: str | None = None) -> dict[str, Any]:
    """A select over a ``Literal`` parameter's values."""
    info = field_of(model_cls, name)
    if typing.get_origin(info.annotation) is not typing.Literal:
        raise TypeError(f"{name}: a select needs a Literal parameter, not {info.annotation}")
    values = [str(v) for v in typing.get_args(info.annotation)]
    spec = {
        "type": "Select",
        "label": label or name.replace("_", " "),
        "value": str(info.default),
        "values": values,
    }
    return _described(spec, info)


def checkbox(model_cls: Schema, name: str, *, label: str | None = None) -> dict[str, Any]:
    info = field_of(model_cls, name)
    if info.annotation is not bool:
        raise TypeError(f"{name}: a checkbox needs a bool parameter, not {info.annotation}")
    spec = {
        "type": "Checkbox",
        "label": label or name.replace("_", " "),
        "value": bool(info.default),
    }
    return _described(spec, info)


def int_slider(
    label: str, value: int, low: int, high: int, step: int = 1, unit: str = ""
) -> dict[str, Any]:
    """A slider for a dashboard-side setting (a count of personas, a population size)."""
    spec = {
        "type": "SliderInt",
        "label": label,
        "value": value,
        "min": low,
        "max": high,
        "step": step,
    }
    return {**spec, "unit": unit} if unit else spec


def choice(label: str, value: str, values: list[str]) -> dict[str, Any]:
    return {"type": "Select", "label": label, "value": value, "values": values}


def seed_box(value: int | str = 42) -> dict[str, Any]:
    """The seed input (Mesa returns its text; ``runtime.coerce_seed`` makes it an int)."""
    return {"type": "InputText", "label": "seed (blank: random)", "value": str(value)}


def llm_controls() -> dict[str, Any]:
    """Provider and model of the LLM agents (the embedded local model by default)."""
    return {
        "llm_provider": choice("LLM provider", "local", provider_names()),
        "llm_model": {
            "type": "InputText",
            "label": "LLM model (blank: default; openai: name@http://host/v1)",
            "value": "",
        },
        "llm_answer_mode": choice("LLM answer mode", "native", list(ANSWER_MODES)),
        "llm_max_tokens": int_slider("LLM max tokens per reply", 256, 16, 1024, 16, "tokens"),
    }
