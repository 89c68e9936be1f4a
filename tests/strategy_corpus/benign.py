"""Well-behaved strategies that use what LLM-written code commonly reaches for.

Not hostile: every class here must play without a flag in the sandbox.  They
exist so that the seccomp allowlist is measured (and then tested) against
ordinary Python -- standard-library imports made while playing, numpy
allocations large enough to be given back to the system, linear algebra
(OpenBLAS), fresh random generators, the clock, printing, exceptions caught
inside the strategy.  See scripts/measure_sandbox_syscalls.py.
"""

import collections
import math
import random
import time

import numpy as np

from mesa_dilemmas.dilemmas.binary.strategies import C, D, Strategy


class LazyImports(Strategy):
    """Imports standard-library modules while playing (pure Python and extension modules)."""

    def act(self, history):
        import bisect
        import decimal
        import fractions
        import functools
        import heapq
        import itertools
        import json
        import re
        import statistics
        import string

        data = [int(x) for x in history.cooperators] or [0]
        values = [statistics.mean(data), float(fractions.Fraction(1, 3)), float(decimal.Decimal(1))]
        json.dumps({"v": values, "r": bool(re.match(r"\d", string.digits))})
        heapq.heapify(data)
        bisect.bisect(sorted(data), 1)
        functools.reduce(lambda a, b: a + b, itertools.chain(data, [0]))
        return C


class BigArrays(Strategy):
    """Allocates and frees tens of MB (mmap/munmap), grows a list (mremap), sorts."""

    def act(self, history):
        if history.round_number > 1:
            return C
        a = np.random.default_rng(history.round_number).random(2_000_000)
        b = bytearray(20_000_000)
        del b
        grow = []
        for i in range(100_000):
            grow.append(i)
        return C if a[:1000].mean() > 0.1 else D


class LinearAlgebra(Strategy):
    """numpy's BLAS and LAPACK (OpenBLAS sets itself up on first use)."""

    def act(self, history):
        if history.round_number > 1:
            return C
        m = np.random.default_rng(0).random((200, 200))
        inv = np.linalg.inv(m + 200 * np.eye(200))
        fit = np.polyfit(np.arange(10), np.arange(10) * 2.0, 1)
        return C if float((m @ inv).trace()) > 0 and fit[0] > 0 else D


class FreshRandomness(Strategy):
    """Unseeded generators (the OS's entropy), the clock, a short sleep."""

    def act(self, history):
        rng = np.random.default_rng()
        r = random.Random()
        start = time.perf_counter()
        if history.round_number == 0:
            time.sleep(0.0005)
        elapsed = time.perf_counter() - start + time.time() * 0 + time.monotonic() * 0
        return C if rng.random() + r.random() + elapsed >= 0 else D


class ChattyAndCareful(Strategy):
    """Prints a little, raises and catches exceptions, uses collections and math."""

    def __init__(self, game):
        super().__init__(game)
        self.seen = collections.Counter()

    def act(self, history):
        print(f"round {history.round_number}")
        try:
            math.log(0)
        except ValueError:
            self.seen["log"] += 1
        try:
            {}["missing"]
        except KeyError:
            self.seen["key"] += 1
        return C if self.seen["log"] >= 1 else D
