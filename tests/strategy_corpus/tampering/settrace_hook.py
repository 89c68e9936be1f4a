"""Installs a trace hook that makes every other strategy's act raise."""

import sys

from mesa_dilemmas.dilemmas.binary.strategies import Strategy

NAME = "settrace_hook"


def _hook(frame, event, arg):
    if event == "call" and frame.f_code.co_name == "act":
        owner = frame.f_locals.get("self")
        if owner is not None and type(owner).__name__ != "SettraceHook":
            raise RuntimeError("framed by a trace hook")
    return None


class SettraceHook(Strategy):
    def act(self, history):
        sys.settrace(_hook)
        return "C"
