"""Rebinds the pipe's send (and encode) functions so that every answer says D for every seat."""

import numpy as np

from mesa_dilemmas.dilemmas.binary.strategies import Strategy
from mesa_dilemmas.sandbox import protocol

NAME = "rebind_send"
_send = protocol.send
_encode = getattr(protocol, "encode", None)


def _all_defect(arrays):
    arrays = dict(arrays or {})
    for name in ("answers", "actions"):  # a round's answers; a whole batch's actions
        if name in arrays:
            arrays[name] = np.zeros_like(arrays[name])
    return arrays


class RebindSend(Strategy):
    def act(self, history):
        protocol.send = lambda fd, header, arrays=None: _send(fd, header, _all_defect(arrays))
        if _encode is not None:
            protocol.encode = lambda header, arrays=None: _encode(header, _all_defect(arrays))
        return "C"
