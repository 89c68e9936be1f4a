"""What a person sees of a decision: the observation in readable form, and a form's values.

The observation is the one a language model at the seat would get (the same plain data its
prompt is rendered from), shown as labelled values; repeated copies (a nested table that only
repeats values shown above it) are shown once.  The form's value is built from the answer spec
(:func:`empty`) and handed back as the spec's validator expects it (:func:`answer_of`): nothing
is clamped or guessed -- a blank required field stays missing and the spec says so.
"""

from __future__ import annotations

import html
from typing import Any

from mesa_dilemmas.agents.decisions import (
    AnswerSpec,
    ChoiceSpec,
    ListSpec,
    NumberSpec,
    StructSpec,
    TextSpec,
)

#: texts longer than this are folded on the page (and a repeat of one is shown once)
LONG = 300


def label(key: str) -> str:
    """``my_payoffs`` -> ``my payoffs``."""
    return str(key).replace("_", " ").strip()


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def value_html(value: Any, depth: int = 0) -> str:
    if isinstance(value, dict):
        return dict_html(value, depth + 1)
    if isinstance(value, list):
        if not value:
            return '<span class="host-none">none yet</span>'
        if all(not isinstance(v, dict | list) for v in value):
            return html.escape(", ".join(_scalar(v) for v in value))
        if all(
            isinstance(v, dict) and all(not isinstance(x, dict | list) for x in v.values())
            for v in value
        ):  # records (every villager's effort and payoff): one table, a row each
            columns = list(dict.fromkeys(k for v in value for k in v))
            head = "".join(f"<th>{html.escape(label(c))}</th>" for c in columns)
            rows = "".join(
                "<tr>" + "".join(f"<td>{value_html(v.get(c, ''))}</td>" for c in columns) + "</tr>"
                for v in value
            )
            return f'<table class="host-records"><tr>{head}</tr>{rows}</table>'

        items = "".join(f"<li>{value_html(v, depth + 1)}</li>" for v in value)
        return f"<ol>{items}</ol>"
    text = _scalar(value)
    if len(text) > LONG:  # a long text (the rules, a briefing): folded under its first line
        first = text.strip().splitlines()[0][:120]
        body = html.escape(text).replace("\n", "<br>")
        return (
            f'<details class="host-text"><summary>{html.escape(first)}…</summary>{body}</details>'
        )
    if len(text) > 80 or "\n" in text:
        return '<div class="host-text">' + html.escape(text).replace("\n", "<br>") + "</div>"
    return html.escape(text)


def dict_html(obs: dict[str, Any], depth: int = 0) -> str:
    rows = []
    for key, value in obs.items():
        if value is None or value == {} or value == "":
            continue
        rows.append(
            f'<tr data-obs="{html.escape(str(key))}"><th>{html.escape(label(key))}</th>'
            f"<td>{value_html(value, depth)}</td></tr>"
        )
    return f'<table class="host-obs">{"".join(rows)}</table>'


def readable(observation: dict[str, Any]) -> dict[str, Any]:
    """The observation without repeats: a nested table whose every entry is shown at the top
    level, or a second copy of a table already shown, is left out."""
    out: dict[str, Any] = {}
    seen: list[Any] = []
    texts: list[tuple[str, str]] = []  # long texts shown so far, and under which key
    for key, value in observation.items():
        if isinstance(value, str) and len(value) > LONG:
            for text, where in texts:
                if text in value:  # a long text that repeats one above: only what it adds
                    value = value.replace(text, f"[{label(where)}, as above]").strip()
            if not value or (value.startswith("[") and value.endswith(", as above]")):
                continue
            texts.append((value, key))
        if isinstance(value, dict):
            if value in seen:
                continue
            if value and all(k in observation and observation[k] == v for k, v in value.items()):
                continue
            seen.append(value)
        out[key] = value
    return out


def observation_html(observation: dict[str, Any]) -> str:
    return dict_html(readable(observation))


# -- the form's value ----------------------------------------------------------------


def empty(spec: AnswerSpec) -> Any:
    """A blank form for ``spec`` (nothing chosen, nothing typed)."""
    if isinstance(spec, StructSpec):
        return {name: empty(sub) for name, sub in spec.fields.items()}
    if isinstance(spec, ListSpec):
        return []
    return None


def answer_of(spec: AnswerSpec, value: Any) -> Any:
    """The form's value as the spec's validator takes it: blank boxes are missing values,
    optional blank fields are left out, typed numbers stay text for the spec to read."""
    if isinstance(spec, StructSpec):
        value = value if isinstance(value, dict) else {}
        out = {}
        for name, sub in spec.fields.items():
            item = answer_of(sub, value.get(name))
            if name in spec.optional and (item is None or item in ({}, [])):
                continue
            out[name] = item
        return out
    if isinstance(spec, ListSpec):
        return [answer_of(spec.item, v) for v in (value or [])]
    if isinstance(spec, NumberSpec | ChoiceSpec):
        if value is None or (isinstance(value, str) and not value.strip()):
            return None
        return value
    if isinstance(spec, TextSpec):
        return "" if value is None else str(value)
    return value


def hint(spec: AnswerSpec) -> str:
    """One line under a field: what the spec accepts."""
    if isinstance(spec, NumberSpec):
        kind = "a whole number" if spec.integer else "a number"
        return f"{kind} from {spec.low:g} to {spec.high:g}"
    if isinstance(spec, TextSpec):
        return f"at most {spec.max_chars} characters"
    if isinstance(spec, ListSpec):
        return f"up to {spec.max_items} items"
    return ""
