"""Agents: one decision interface for rule-based, strategy-as-code and LLM-backed players."""

from mesa_dilemmas.agents.base import DilemmaAgent
from mesa_dilemmas.agents.broker import DecisionBroker, DecisionStats
from mesa_dilemmas.agents.decisions import (
    AnswerSpec,
    ChoiceSpec,
    Decision,
    InvalidAnswer,
    ListSpec,
    NumberSpec,
    StructSpec,
    TextSpec,
)
from mesa_dilemmas.agents.persona import Persona
from mesa_dilemmas.agents.policy import Answer, FixedPolicy, Policy, RulePolicy

__all__ = [
    "Answer",
    "AnswerSpec",
    "ChoiceSpec",
    "Decision",
    "DecisionBroker",
    "DecisionStats",
    "DilemmaAgent",
    "FixedPolicy",
    "InvalidAnswer",
    "ListSpec",
    "NumberSpec",
    "Persona",
    "Policy",
    "RulePolicy",
    "StructSpec",
    "TextSpec",
]
