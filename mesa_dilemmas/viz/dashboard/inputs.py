"""The sidebar's parameter inputs: sliders that show their value, and the other input kinds.

They read the same specs as Mesa's ``UserInputs`` (see :mod:`.controls`), with three
differences a user notices:

* every slider shows its value in an editable box beside the track (typed values are
  taken on Enter or when the box is left, if they are numbers within the slider's range;
  the box turns red otherwise),
  with the parameter's unit where one is known (``"unit"`` in the spec);
* the slider's label sits above the track, so a long label never squeezes it;
* each input's accessible name is the parameter's words (the slider's thumb and the value
  box both carry them as ``aria-label``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import ipyvuetify as v
import solara
import traitlets

#: the parameter kinds a spec can ask for
KINDS = ("SliderInt", "SliderFloat", "Select", "Checkbox", "InputText")


def parse_number(text: str, spec: dict[str, Any]) -> float | int | None:
    """The typed text as the slider's value, or None when it is not one (not a number, outside
    the range, or a fraction for a whole-number slider)."""
    try:
        number = float(str(text).strip())
    except ValueError:
        return None
    if not math.isfinite(number) or not spec["min"] <= number <= spec["max"]:
        return None
    if spec["type"] == "SliderInt":
        return int(number) if number == int(number) else None
    return number


def show_number(value: Any, spec: dict[str, Any]) -> str:
    """The value as the box shows it (no float noise: 0.30000000000000004 -> 0.3)."""
    if spec["type"] == "SliderInt":
        return str(int(value))
    return f"{float(value):.10g}"


class ValueBox(v.VuetifyTemplate):
    """The value box beside a slider: a number field whose text reaches Python when it is
    committed (Enter or leaving the field), with the parameter's words as its ``aria-label``
    (in a template, so the attribute lands on the ``<input>`` itself)."""

    template = traitlets.Unicode(
        """
        <template>
          <v-text-field :value="text" @change="text = String($event)" type="number"
            :min="min" :max="max" :step="step" :suffix="unit || undefined" :error="error"
            dense hide-details single-line class="mdd-value mt-0 pt-0"
            :aria-label="label" :data-value-box="name" />
        </template>
        """
    ).tag(sync=True)
    text = traitlets.Unicode("").tag(sync=True)
    name = traitlets.Unicode("").tag(sync=True)
    label = traitlets.Unicode("").tag(sync=True)
    unit = traitlets.Unicode("").tag(sync=True)
    min = traitlets.Float(0).tag(sync=True)
    max = traitlets.Float(1).tag(sync=True)
    step = traitlets.Float(1).tag(sync=True)
    error = traitlets.Bool(False).tag(sync=True)


def tooltip(spec: dict[str, Any]) -> dict[str, str]:
    """The parameter's description from its schema, as the input's tooltip (``title``)."""
    return {"title": spec["description"]} if spec.get("description") else {}


@solara.component
def NumberSlider(
    name: str, spec: dict[str, Any], value: Any, on_value: Callable[[Any], None]
) -> None:
    """A slider with its label above it and an editable value box (with unit) beside it.

    The slider keeps its own value (as Mesa's inputs do), starting from ``value``; every
    change goes to ``on_value``."""
    label = spec.get("label", name)
    unit = spec.get("unit", "")
    current = solara.use_reactive(value)
    text, set_text = solara.use_state(show_number(value, spec))
    parsed = parse_number(text, spec)
    # the box shows what was typed while it is not a valid value; otherwise the value itself
    shown = text if parsed is None else show_number(current.value, spec)

    def typed(new: str) -> None:
        set_text(new)
        number = parse_number(new, spec)
        if number is not None and number != current.value:
            current.set(number)
            on_value(number)

    def slid(new: Any) -> None:
        number = int(new) if spec["type"] == "SliderInt" else float(new)
        set_text(show_number(number, spec))
        if number != current.value:
            current.set(number)
            on_value(number)

    with solara.Div(classes=["mdd-param"], attributes={"data-param": name, **tooltip(spec)}):
        solara.v.Slider(
            label=label,
            v_model=current.value,
            on_v_model=slid,
            min=spec["min"],
            max=spec["max"],
            step=spec["step"],
            hide_details=True,
            dense=True,
            class_="mdd-slider",
        )
        ValueBox.element(
            text=shown,
            on_text=typed,
            name=name,
            label=f"{label}{f' ({unit})' if unit else ''}",
            unit=unit,
            min=float(spec["min"]),
            max=float(spec["max"]),
            step=float(spec["step"]),
            error=parse_number(shown, spec) is None,
        )


@solara.component
def ParameterInputs(
    specs: dict[str, Any], values: dict[str, Any], on_change: Callable[[str, Any], None]
) -> None:
    """One input per user-adjustable spec (fixed entries are skipped), in the specs' order."""
    for name, spec in specs.items():
        if not (isinstance(spec, dict) and spec.get("type") in KINDS):
            continue
        value = values.get(name, spec.get("value"))
        label = spec.get("label", name)

        def change(new: Any, name: str = name) -> None:
            on_change(name, new)

        kind = spec["type"]
        if kind in ("SliderInt", "SliderFloat"):
            NumberSlider(name, spec, value, change)
            continue
        # ``data-value`` is the value the server holds (the browser tests wait for it)
        with solara.Div(attributes={"data-param": name, "data-value": str(value), **tooltip(spec)}):
            if kind == "Select":
                solara.Select(label, value=value, values=spec["values"], on_value=change)
            elif kind == "Checkbox":
                solara.Checkbox(label=label, value=bool(value), on_value=change)
            else:
                solara.InputText(label, value=str(value), on_value=change)
