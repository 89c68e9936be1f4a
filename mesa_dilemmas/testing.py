"""Conformance checks for games, shipped as library code: ``check_game(ModelClass)``.

Any game -- built in, installed by entry point, or named ``"package.module:Class"`` -- is held
to the same contract before the runner, ``batch_run`` and the dashboard rely on it::

    from mesa_dilemmas.testing import check_game
    check_game(MyModel)                       # raises GameCheckFailed naming the broken check
    check_game(MyModel, params={"n": 6}, steps=4)

The checks, each a function of its own so a test can run one:

- ``check_schema``: the parameters build a schema and each has a description; every declared
  bound, choice and unknown key is rejected when broken (``--set`` and scenarios rely on it)
- ``check_determinism``: the same seed gives the same model reporters, step by step
- ``check_batch_run``: two steps through Mesa's ``batch_run`` produce rows
- ``check_run_metrics``: every name in ``RUN_METRICS`` is a model reporter
- ``check_decisions``: every decision the game asks has a spec that accepts the answer its rule
  players gave and a documented fallback (which may be a marker outside the spec, such as "no
  meeting held"), and the game keeps running when every decision is answered by its fallback
  (what happens to a run whose LLM keeps failing)
- ``check_llm_path``: every decision renders to a prompt in both answer modes, and an answer
  coming back through the LLM layer's parser -- the path a cached or replayed response takes --
  is read back as the same value
- ``check_rule_only``: the default parameters need no LLM and every policy is a local one
"""

from __future__ import annotations

import math
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import mesa
import pandas as pd
from pydantic import ValidationError

from mesa_dilemmas.agents.decisions import Decision
from mesa_dilemmas.agents.policy import Answer, Policy


class GameCheckFailed(AssertionError):
    """A game broke the contract; the message names the check and what was wrong."""


@dataclass
class GameReport:
    """What ``check_game`` saw: the checks passed and the decision kinds the game asked."""

    game: str
    passed: list[str] = field(default_factory=list)
    decision_kinds: list[str] = field(default_factory=list)
    #: the kinds rendered and parsed through the LLM layer (those asked of LLM seats)
    llm_kinds: list[str] = field(default_factory=list)


def _fail(check: str, message: str) -> None:
    raise GameCheckFailed(f"{check}: {message}")


def _make(model_cls: type[mesa.Model], params: Mapping[str, Any], seed: int) -> mesa.Model:
    from mesa_dilemmas.dilemmas.base import build_model

    return build_model(model_cls, params, seed)


def _run(model: mesa.Model, steps: int) -> mesa.Model:
    for _ in range(steps):
        if not model.running:
            break
        model.step()
    return model


# -- schema ---------------------------------------------------------------------------------


def _bad_values(annotation: Any, metadata: list[Any]) -> list[Any]:
    """Values that a field's declared constraints must reject."""
    bad: list[Any] = []
    for m in metadata:
        for attr, delta in (("ge", -1), ("gt", 0), ("le", 1), ("lt", 0)):
            bound = getattr(m, attr, None)
            if isinstance(bound, int | float) and not isinstance(bound, bool):
                bad.append(bound + delta if delta else bound)
    if typing.get_origin(annotation) is typing.Literal:
        bad.append("__not_a_choice__")
    return bad


def check_schema(model_cls: type[mesa.Model]) -> None:
    from mesa_dilemmas.dilemmas.base import params_model

    try:
        schema = params_model(model_cls)
    except Exception as exc:  # noqa: BLE001 - any failure to build is the finding
        _fail("check_schema", f"the keyword parameters do not build a schema: {exc}")
    try:
        schema.model_json_schema()
    except Exception as exc:  # noqa: BLE001
        _fail("check_schema", f"the schema has no JSON form: {exc}")
    try:
        schema.model_validate({"__no_such_parameter__": 1})
    except ValidationError:
        pass
    else:
        _fail("check_schema", "an unknown parameter is accepted")
    undescribed = [name for name, info in schema.model_fields.items() if not info.description]
    if undescribed:
        _fail(
            "check_schema",
            f"parameters without a description: {', '.join(undescribed)} (give each "
            "Annotated[..., Field(description=...)]; the CLI's params listing and the dashboard "
            "show it)",
        )
    for name, info in schema.model_fields.items():
        for value in _bad_values(info.annotation, info.metadata):
            try:
                schema.model_validate({name: value})
            except ValidationError:
                continue
            _fail(
                "check_schema", f"{name}={value!r} breaks its declared constraint but is accepted"
            )


# -- running --------------------------------------------------------------------------------


def _frames_equal(a: pd.DataFrame, b: pd.DataFrame) -> bool:
    try:
        pd.testing.assert_frame_equal(a, b, check_dtype=False)
    except AssertionError:
        return False
    return True


def check_determinism(model_cls: type[mesa.Model], params: Mapping[str, Any], steps: int) -> None:
    frames = []
    for _ in range(2):
        model = _run(_make(model_cls, params, seed=12345), steps)
        collector = getattr(model, "datacollector", None)
        if collector is None:
            _fail("check_determinism", "the model has no datacollector")
        frames.append(collector.get_model_vars_dataframe())
    if not _frames_equal(*frames):
        _fail("check_determinism", "two runs with seed 12345 report different values")


def check_batch_run(model_cls: type[mesa.Model], params: Mapping[str, Any]) -> None:
    from mesa.batchrunner import batch_run

    rows = batch_run(
        model_cls,
        parameters={k: [v] for k, v in params.items()},
        rng=[7],
        max_steps=2,
        number_processes=1,
        data_collection_period=1,
        display_progress=False,
    )
    if not rows:
        _fail("check_batch_run", "batch_run returned no rows")


def check_run_metrics(model_cls: type[mesa.Model], params: Mapping[str, Any]) -> None:
    model = _make(model_cls, params, seed=1)
    reporters = set(model.datacollector.model_reporters)
    missing = [m for m in getattr(model_cls, "RUN_METRICS", ()) if m not in reporters]
    if missing:
        _fail("check_run_metrics", f"RUN_METRICS names {missing} but no model reporter has them")


# -- decisions ------------------------------------------------------------------------------


class _Recorder(Policy):
    """Wraps a policy: answers as it does and keeps every decision with the answer given."""

    def __init__(self, inner: Policy, log: list[tuple[Decision, Any]]) -> None:
        self.inner, self.log = inner, log
        self.name, self.is_async, self.strict = inner.name, inner.is_async, inner.strict

    def bind(self, agent: Any) -> None:
        super().bind(agent)
        self.inner.agent = agent

    def decide(self, decision: Decision) -> Any:
        answer = self.inner.decide(decision)
        self.log.append((decision, answer.value if isinstance(answer, Answer) else answer))
        return answer


class FallbackPolicy(Policy):
    """Answers every decision with its documented fallback (what a failing LLM ends up with)."""

    name = "fallback"

    def decide(self, decision: Decision) -> Answer:
        return Answer(None, fell_back=True, error="check_game: fallback on purpose")


def _swap_policies(model: mesa.Model, make: Callable[[Policy], Policy]) -> None:
    for agent in model.agents:
        policy = getattr(agent, "policy", None)
        if isinstance(policy, Policy):
            agent.policy = make(policy)
            agent.policy.bind(agent)
    broker = getattr(model, "broker", None)
    if broker is not None and broker.narrator is not None:
        broker.narrator = make(broker.narrator)
        broker.narrator.bind(None)


def check_decisions(
    model_cls: type[mesa.Model], params: Mapping[str, Any], steps: int
) -> list[tuple[Decision, Any]]:
    log: list[tuple[Decision, Any]] = []
    model = _make(model_cls, params, seed=3)
    _swap_policies(model, lambda p: _Recorder(p, log))
    _run(model, steps)
    seen: set[str] = set()
    for decision, answer in log:
        try:
            decision.validate(answer)
        except Exception as exc:  # noqa: BLE001
            _fail(
                "check_decisions",
                f"{decision.kind}: the rule player's answer {answer!r} is invalid: {exc}",
            )
        if decision.kind in seen:
            continue
        seen.add(decision.kind)
        if decision.fallback is None:
            _fail("check_decisions", f"{decision.kind}: no documented fallback")
    fallback_model = _make(model_cls, params, seed=3)
    _swap_policies(fallback_model, lambda p: FallbackPolicy())
    try:
        _run(fallback_model, steps)
    except Exception as exc:  # noqa: BLE001
        _fail("check_decisions", f"the game breaks when every answer is the fallback: {exc!r}")
    return log


_LLM_SEAT_LOG: list[tuple[Decision, Any]] = []


class _LLMSeat(Policy):
    """Stands in an LLM's seat (a non-rule population group): records what such a seat is
    asked -- games show LLM seats more than rule seats -- and answers with the fallback."""

    name = "llm-seat"
    strict = False
    reads_text = True  # games that render texts only for text-reading policies render them here

    def decide(self, decision: Decision) -> Answer:
        _LLM_SEAT_LOG.append((decision, decision.fallback))
        return Answer(None, fell_back=True, error="check_game: stand-in for an LLM")


def llm_seat(**_: Any) -> Policy:
    """The population factory of :class:`_LLMSeat` (``factory = "mesa_dilemmas.testing:llm_seat"``)."""
    return _LLMSeat()


def llm_seat_decisions(
    model_cls: type[mesa.Model], params: Mapping[str, Any], steps: int
) -> list[tuple[Decision, Any]]:
    """The decisions LLM seats are asked, when the game takes a population (else none)."""
    from mesa_dilemmas.dilemmas.base import params_model, shorthand_names

    if "players" not in params_model(model_cls).model_fields:
        return []
    seat = {"factory": "mesa_dilemmas.testing:llm_seat"}
    roles = {r: seat for r in getattr(model_cls, "POPULATION_ROLES", ())}
    names = shorthand_names(model_cls)  # the seats come from the population below
    shorthand = {k: v for k, v in params.items() if k not in names}
    _LLM_SEAT_LOG.clear()
    # every seat an LLM's, then half of them (so rule players' moves reach LLM seats: offers, votes)
    for fraction in (1.0, 0.5):
        population = {
            "groups": [{**seat, "fraction": fraction}],
            "placement": "first",
            "roles": roles,
        }
        _run(_make(model_cls, {**shorthand, "players": population}, seed=4), steps)
    return list(_LLM_SEAT_LOG)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)
    return a == b


def check_llm_path(log: list[tuple[Decision, Any]]) -> None:
    import json

    from mesa_dilemmas.llm.answers import parse_response
    from mesa_dilemmas.llm.prompts import render
    from mesa_dilemmas.llm.request import ChatResponse

    done: set[str] = set()
    for decision, answer in log:
        if decision.kind in done:
            continue
        done.add(decision.kind)
        model = getattr(decision.agent, "model", None)
        if model is not None:
            from mesa_dilemmas.llm.population import register_game_prompts

            register_game_prompts(type(model))
        try:
            value = decision.validate(answer)
        except Exception:  # noqa: BLE001 - a fallback marker outside the spec: render only
            value = None
        persona = getattr(decision.agent, "persona", None)
        for mode in ("native", "tags"):
            try:
                prompt = render(decision, mode=mode, persona=persona, round_=decision.step)
            except Exception as exc:  # noqa: BLE001
                _fail(
                    "check_llm_path", f"{decision.kind}: the {mode} prompt does not render: {exc!r}"
                )
            if value is None:
                continue
            if mode == "native":
                text = json.dumps({"reasoning": "", "answer": value})
            else:
                encoded = value if isinstance(value, str) else json.dumps(value)
                text = f"<{prompt.tag}>{encoded}</{prompt.tag}>"
            parsed = parse_response(ChatResponse(text=text), decision.spec, mode, prompt.tag)
            if not _same(parsed.value, value):
                _fail(
                    "check_llm_path",
                    f"{decision.kind}: {mode} answer {value!r} comes back as {parsed.value!r}",
                )


def check_rule_only(model_cls: type[mesa.Model], params: Mapping[str, Any], steps: int) -> None:
    specs = getattr(model_cls, "llm_specs", lambda p: set())(dict(params))
    if specs:
        _fail("check_rule_only", f"these parameters call LLMs: {sorted(specs)}")
    model = _make(model_cls, params, seed=5)
    remote = [a for a in model.agents if getattr(getattr(a, "policy", None), "is_async", False)]
    if remote:
        _fail("check_rule_only", f"{len(remote)} agents have asynchronous (LLM) policies")
    _run(model, steps)


def check_game(
    model_cls: type[mesa.Model], *, params: Mapping[str, Any] | None = None, steps: int = 3
) -> GameReport:
    """Run every check on ``model_cls`` with ``params`` (default: its defaults)."""
    params = dict(params or {})
    report = GameReport(getattr(model_cls, "GAME", "") or model_cls.__name__)
    check_schema(model_cls)
    report.passed.append("schema")
    check_rule_only(model_cls, params, steps)
    report.passed.append("rule_only")
    check_determinism(model_cls, params, steps)
    report.passed.append("determinism")
    check_batch_run(model_cls, params)
    report.passed.append("batch_run")
    check_run_metrics(model_cls, params)
    report.passed.append("run_metrics")
    log = check_decisions(model_cls, params, steps)
    report.passed.append("decisions")
    seats = llm_seat_decisions(model_cls, params, steps)
    check_llm_path(seats or log)  # what LLM seats are asked (a game without populations: all)
    report.llm_kinds = sorted({d.kind for d, _ in seats or log})
    report.passed.append("llm_path")
    report.decision_kinds = sorted({d.kind for d, _ in log})
    return report


__all__ = [
    "FallbackPolicy",
    "GameCheckFailed",
    "GameReport",
    "check_batch_run",
    "check_decisions",
    "check_determinism",
    "check_game",
    "check_llm_path",
    "check_rule_only",
    "check_run_metrics",
    "check_schema",
]
