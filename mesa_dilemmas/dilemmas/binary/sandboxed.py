"""Batches with untrusted strategies: played whole in a sandbox worker, checked here.

Two halves of one protocol:

* :func:`play_sandboxed` (the run's process) sends the batch -- game, lineups
  as references to entries, entropies, scripted actions -- to the process's
  sandbox worker and gets back every seat's actions, which strategies drew
  random numbers, and the flags.  It then replays the batch with every seat
  scripted, so payoffs, stocks and history come from this process's rules, not
  from anything the worker claims.
* :func:`sandbox_play` (the worker) plays the batch with a guarded engine loop:
  a strategy that raises, answers something other than C/D, or fails to build
  plays :data:`DEFAULT_ACTION` that round and is flagged; the match goes on.

What cannot be caught inside the worker -- a call that hangs, a crash of the
interpreter, ``os._exit``, the memory or CPU limit, patching the engine -- ends
the worker.  The run then knows from the worker's progress page which seat was
playing which round, flags that strategy, disables it from that round on (its
instance died with the worker) and replays the batch in a fresh worker; the
replay is deterministic, so the earlier rounds come out the same.  Patching is
found by an identity check after every round (:mod:`.integrity`); the round is
then replayed with the check after every call to find who did it.

Global random state: the worker seeds Python's ``random`` and numpy's global
generator at the start of every batch from the batch's entropies, so strategies
that use them are reproducible; batches are fixed by the experiments' task
decomposition, never by the number of processes.
"""

from __future__ import annotations

import gc
import random
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np

from mesa_dilemmas.agents.strategies.base import ACTION_CODE
from mesa_dilemmas.agents.strategies.loader import StrategyEntry, entry_class
from mesa_dilemmas.agents.strategies.sandbox import (
    Flag,
    WorkerLost,
    default_sandbox,
    get_limits,
    integrity,
    register_handler,
)
from mesa_dilemmas.agents.strategies.sandbox.worker import (
    BUILDING,
    LOADING,
    PLAYING,
    SLOT_PHASE,
    SLOT_ROUND,
    SLOT_SEAT,
)
from mesa_dilemmas.dilemmas.binary.engine import BatchResult, play_in_process
from mesa_dilemmas.dilemmas.binary.rules import BinaryGame, make_game

#: what a misbehaving strategy plays in a round it failed (the fallback of an LLM decision too)
DEFAULT_ACTION = "D"
register_handler("play", "mesa_dilemmas.dilemmas.binary.sandboxed:sandbox_play")


#: memoise deterministic strategies' answers by history (``set_memoise(False)`` to compare)
MEMOISE = True


def set_memoise(on: bool) -> None:
    """Turn memoisation of deterministic strategies on or off for batches played from now on."""
    global MEMOISE
    MEMOISE = bool(on)


#: an entry that has cost this many workers is quarantined for the rest of the process: it plays
#: the default action in every later match (a hanging strategy must not make the run crawl)
QUARANTINE_AFTER = 2
_losses: dict[str, list[str]] = {}


def _key(entry: StrategyEntry) -> str:
    return repr(sorted(entry.ref().items()))


def _default(view: Any) -> str:
    return DEFAULT_ACTION


# -- the run's side --------------------------------------------------------------------------


def play_sandboxed(
    game: BinaryGame,
    lineups: Sequence[Sequence[StrategyEntry | None]],
    entropies: Sequence[int],
    scripted: np.ndarray | None,
    rounds: int | None,
    keep_history: bool,
) -> BatchResult:
    """:func:`~mesa_dilemmas.dilemmas.binary.game.play_batch` for batches with untrusted strategies."""
    n, horizon = game.n_players, game.n_rounds
    played = horizon if rounds is None else int(rounds)
    batch = len(lineups)
    if len(entropies) != batch:
        raise ValueError("play_batch: one entropy per match is required")
    index: dict[int, int] = {}
    entries: list[StrategyEntry] = []
    seat_entry = np.full((batch, n), -1, dtype=np.int32)
    for b, lineup in enumerate(lineups):
        if len(lineup) != n:
            raise ValueError(f"play_batch: match {b} has {len(lineup)} players, the game has {n}")
        for i, entry in enumerate(lineup):
            if entry is None:
                continue
            k = index.get(id(entry))
            if k is None:
                k = index[id(entry)] = len(entries)
                entries.append(entry)
            seat_entry[b, i] = k
    if scripted is None and (seat_entry < 0).any():
        raise ValueError("play_batch: scripted seats (None) need a `scripted` action array")
    free = np.flatnonzero(seat_entry.reshape(-1) >= 0)
    header: dict[str, Any] = {
        "game": game.NAME,
        "n": n,
        "horizon": horizon,
        "rounds": played,
        "params": game.params(),
        "entries": [e.ref() for e in entries],
        "trusted": [e.trusted for e in entries],
        "skip_entries": [],
        "disabled": [],  # [free-seat index, from round]
        "audit_round": None,
        # deterministic entries (known from their checks): answers memoised by history
        "memo": [bool(MEMOISE and e.deterministic) for e in entries],
        "anonymous": [bool(e.anonymous) for e in entries],
    }
    arrays: dict[str, np.ndarray] = {
        "lineups": seat_entry,
        "entropies": np.asarray(entropies, dtype=np.int64),
    }
    if scripted is not None:
        arrays["scripted"] = (np.asarray(scripted)[:, :, :horizon] > 0).astype(np.int8)
    lost_flags: dict[int, tuple[int, str]] = {}  # free-seat index -> (round, reason)
    entry_flags: dict[int, str] = {}
    keys = [_key(e) for e in entries]
    for k, key in enumerate(keys):
        if len(_losses.get(key, ())) >= QUARANTINE_AFTER:
            header["skip_entries"].append(k)
            entry_flags[k] = f"quarantined: {_losses[key][0]} (and {len(_losses[key]) - 1} more)"
    flat_entry = seat_entry.reshape(-1)
    box = default_sandbox()
    budget = get_limits().match_cpu * max(1, batch) * (played / max(1, horizon))
    for _attempt in range(len(free) + len(entries) + 4):
        try:
            out, got = box.call("play", header, arrays, budget=max(budget, 1.0))
            if "error" in out:  # the engine failed in the worker: blame whoever was playing
                progress = out.get("progress") or [-1, -1, -1]
                lost = WorkerLost(f"broke the engine ({str(out['error'])[:200]})", tuple(progress))
                box.close()
                raise lost
        except WorkerLost as lost:
            seat, t, phase = (
                lost.progress[SLOT_SEAT],
                lost.progress[SLOT_ROUND],
                lost.progress[SLOT_PHASE],
            )
            if phase == LOADING and 0 <= seat < len(entries):
                header["skip_entries"].append(seat)
                entry_flags[seat] = f"loading its code {lost.reason}"
                continue
            if phase in (BUILDING, PLAYING) and 0 <= seat < len(free):
                t = -1 if phase == BUILDING else min(max(t, 0), played - 1)
                header["disabled"].append([seat, t])
                lost_flags.setdefault(seat, (t, lost.reason))
                e = int(flat_entry[free[seat]])
                _losses.setdefault(keys[e], []).append(lost.reason)
                if len(_losses[keys[e]]) >= QUARANTINE_AFTER and e not in header["skip_entries"]:
                    header["skip_entries"].append(e)
                    entry_flags[e] = f"quarantined: {_losses[keys[e]][0]}"
                continue
            if header["audit_round"] != "all":  # lost between calls: check after every call
                header["audit_round"] = "all"
                continue
            raise RuntimeError(
                f"sandbox worker lost outside any strategy call: {lost.reason}"
            ) from None
        if "tampered" in out:  # find who: replay the round with the check after every call
            header["audit_round"] = int(out["tampered"])
            box.close()
            continue
        if "culprit" in out:
            seat, t = int(out["culprit"]), int(out["round"])
            what = str(out.get("what", "?"))[:200]
            if out.get("phase") == "loading" and 0 <= seat < len(entries):
                header["skip_entries"].append(seat)
                entry_flags[seat] = f"patched {what} when loaded"
            elif 0 <= seat < len(free):
                header["disabled"].append([seat, t])
                lost_flags.setdefault(seat, (t, f"patched {what}"))
            else:
                raise RuntimeError("sandbox worker named no valid culprit")
            header["audit_round"] = None
            box.close()
            continue
        break
    else:
        raise RuntimeError("sandbox: giving up on a batch after too many lost workers")
    actions = got.get("actions")
    used = got.get("used_rng")
    if (
        actions is None
        or actions.shape != (batch, n, played)
        or used is None
        or used.shape != (batch, n)
    ):
        raise RuntimeError("sandbox worker sent actions of the wrong shape")
    full = np.zeros((batch, n, horizon), dtype=np.int8)
    full[:, :, :played] = actions
    gc_was = gc.isenabled()
    gc.disable()
    try:
        result = play_in_process(game, [[None] * n] * batch, entropies, full, played, keep_history)
    finally:
        if gc_was:
            gc.enable()
    result.used_rng = used.astype(bool)
    result.flags = _flags(out, got, lost_flags, entry_flags, entries, seat_entry, free, n)
    memo = out.get("memo") or [0, 0]
    result.memo_hits, result.memo_eligible = int(memo[0]), int(memo[1])
    return result


def _flags(
    out: dict[str, Any],
    got: dict[str, np.ndarray],
    lost: dict[int, tuple[int, str]],
    entry_flags: dict[int, str],
    entries: list[StrategyEntry],
    seat_entry: np.ndarray,
    free: np.ndarray,
    n: int,
) -> list[Flag]:
    flat_entry = seat_entry.reshape(-1)
    reasons = out.get("reasons") or []
    seats, rounds_, counts = (
        got.get("flag_seat", np.zeros(0, np.int64)),
        got.get("flag_round", np.zeros(0, np.int64)),
        got.get("flag_count", np.zeros(0, np.int64)),
    )
    found: dict[int, Flag] = {}
    for k, t, c, why in zip(
        seats.tolist(), rounds_.tolist(), counts.tolist(), reasons, strict=False
    ):
        if not 0 <= k < len(free):
            continue
        b, i = divmod(int(free[k]), n)
        found[k] = Flag(entries[flat_entry[free[k]]].name, b, i, int(t), str(why)[:500], int(c))
    for k, (t, why) in lost.items():
        b, i = divmod(int(free[k]), n)
        found[k] = Flag(entries[flat_entry[free[k]]].name, b, i, t, why, 1)
    for k, flag in sorted(found.items()):
        e = flat_entry[free[k]]
        if e in entry_flags:
            found[k] = Flag(flag.strategy, flag.match, flag.seat, -1, entry_flags[e], flag.count)
    return [found[k] for k in sorted(found)]


# -- the worker's side -----------------------------------------------------------------------


def _describe_exc(exc: BaseException) -> str:
    try:
        text = str(exc)
    except BaseException:  # noqa: BLE001 - a hostile __str__
        text = "?"
    return f"{type(exc).__name__}: {text}"[:300]


def _checked_answers(out: list[Any], flag: Any, t: int, on_bad: Any = None) -> np.ndarray:
    """Every seat's answer as cooperated-or-not: ``"C"``/``"D"`` (or a str subclass whose
    text is one) as it says; anything else plays D, is flagged, and ``on_bad(k)`` is told."""
    good = []
    for k, a in enumerate(out):
        if type(a) is str and a in ACTION_CODE:
            good.append(ACTION_CODE[a])
        elif isinstance(a, str) and str.__str__(a) in ACTION_CODE:
            good.append(ACTION_CODE[str.__str__(a)])
        else:
            good.append(False)
            if on_bad is not None:
                on_bad(k)
            try:
                shown = repr(a)[:60]
            except BaseException:  # noqa: BLE001
                shown = f"a {type(a).__name__}"
            flag(k, t, f"answered {shown}, not 'C' or 'D'")
    return np.array(good, dtype=bool)


def _round_actions(
    answers: np.ndarray,
    scripted: np.ndarray | None,
    flat: np.ndarray,
    free: np.ndarray,
    t: int,
    batch: int,
    n: int,
) -> np.ndarray:
    """(batch, n): round t's actions, the free seats' ``answers`` among the scripted ones
    (``flat`` is scratch space of batch * n)."""
    if len(free) == batch * n:
        return answers.reshape(batch, n)
    assert scripted is not None
    flat[:] = scripted[:, :, t].reshape(-1) > 0
    flat[free] = answers
    return flat.reshape(batch, n)


def _report(header: dict[str, Any]) -> tuple[dict, dict]:
    """A tamper report: undo the patches first, so the worker can still send it."""
    integrity.restore(_WATCHED)
    return header, {}


def sandbox_play(
    header: dict[str, Any], arrays: dict[str, np.ndarray], ctx: Any
) -> tuple[dict, dict]:
    """Play one batch in the worker (the ``"play"`` handler)."""
    gc.disable()
    try:
        return _sandbox_play(header, arrays, ctx)
    except BaseException:
        if integrity.changed(_WATCHED):  # the engine broke because something was patched
            return _report({"tampered": int(ctx.progress[SLOT_ROUND])})
        raise
    finally:
        integrity.restore(_WATCHED)
        gc.enable()


def _sandbox_play(
    header: dict[str, Any], arrays: dict[str, np.ndarray], ctx: Any
) -> tuple[dict, dict]:
    prog = ctx.progress
    game = make_game(header["game"], int(header["n"]), int(header["horizon"]), **header["params"])
    n, horizon, played = game.n_players, game.n_rounds, int(header["rounds"])
    seat_entry = arrays["lineups"]
    entropies = arrays["entropies"]
    scripted = arrays.get("scripted")
    batch = len(seat_entry)
    audit = header.get("audit_round")
    skip = set(header.get("skip_entries") or [])

    # load the classes (a failing import breaks that entry only)
    prog[SLOT_PHASE] = LOADING
    classes: list[Any] = []
    for k, ref in enumerate(header["entries"]):
        prog[SLOT_SEAT] = k
        if k in skip:
            classes.append("its code could not be loaded safely")
            continue
        try:
            classes.append(entry_class(ref))
        except BaseException as exc:  # noqa: BLE001
            classes.append(f"could not be loaded: {_describe_exc(exc)}")
        if audit in (-2, "all") and (what := integrity.changed(_WATCHED)):
            return _report({"culprit": k, "round": -1, "what": what, "phase": "loading"})
    if audit is None and integrity.changed(_WATCHED):
        return _report({"tampered": -2})

    # seed the global generators from the batch, so strategies that use them are reproducible
    seed = np.random.SeedSequence([int(e) & 0xFFFFFFFFFFFFFFFF for e in entropies.tolist()] or [0])
    state = seed.generate_state(4)
    random.seed(int(state[0]) << 32 | int(state[1]))
    np.random.seed(state[2:].astype(np.uint32))
    py_state, np_state = random.getstate(), np.random.get_state()[1].copy()

    from mesa_dilemmas.agents.strategies.history import HistoryStore

    desc = game.description()
    store = HistoryStore(batch, n, horizon, with_stock=game.HAS_STOCK)
    gstate = game.initial_state(batch)
    if gstate is not None:
        store.set_initial_stock(gstate)
    flat_entry = seat_entry.reshape(-1)
    free = np.flatnonzero(flat_entry >= 0)
    flags: dict[int, list[Any]] = {}

    def flag(k: int, t: int, why: str) -> None:
        f = flags.get(k)
        if f is None:
            flags[k] = [t, why, 1]
        else:
            f[2] += 1

    disabled: dict[int, list[int]] = {}
    for k, t in header.get("disabled") or []:
        disabled.setdefault(int(t), []).append(int(k))
    strategies: list[Any] = []
    acts: list[Any] = []
    memo_flags = header.get("memo") or []
    use_memo = audit is None and not disabled and any(memo_flags)
    virtual: dict[int, list[Any]] = {}  # seat -> trie node, while it has no instance
    origin: dict[int, list[Any]] = {}  # memo seat -> its start node (which keeps the tally)
    memo_seats = 0
    if use_memo:
        sig = (game.NAME, n, horizon, repr(sorted(game.params().items())))
        roots = {}
        flags_anon = header.get("anonymous") or [False] * len(memo_flags)
        anonymous = {e for e, a in enumerate(flags_anon) if a}
        for e, ref in enumerate(header["entries"]):
            if memo_flags[e] and not isinstance(classes[e], str):
                roots[e] = _memo_root(repr(sorted(ref.items())) + "/" + str(e in anonymous), sig)
    prog[SLOT_PHASE] = BUILDING
    for k, j in enumerate(free.tolist()):
        b, i = divmod(j, n)
        prog[SLOT_SEAT] = k
        got = classes[flat_entry[j]]
        inst = None
        if use_memo and flat_entry[j] in roots:
            memo_seats += 1
            root = roots[flat_entry[j]]
            place = -1 if flat_entry[j] in anonymous else i  # anonymous: any seat is the same
            start = root[1].get(place) or root[1].setdefault(place, [None, {}, [0, 0]])
            done, missed = start[2]
            if missed < MEMO_TRIAL or done * MEMO_BREAK_EVEN >= missed:  # worth following
                virtual[k] = start
                origin[k] = start
                strategies.append(None)
                acts.append(None)
                continue
        if isinstance(got, str):
            flag(k, -1, got)
        elif k in disabled.get(-1, ()):
            pass
        else:
            cls, params = got
            try:
                inst = cls.create(desc, (int(entropies[b]), (i,)), params)
            except BaseException as exc:  # noqa: BLE001
                flag(k, -1, f"constructor raised {_describe_exc(exc)}")
            if audit in (-1, "all") and (what := integrity.changed(_WATCHED)):
                return _report({"culprit": k, "round": -1, "what": what})
        strategies.append(inst)
        act = getattr(inst, "act", None) if inst is not None else None
        acts.append(act if callable(act) else _default)
    if audit is None and integrity.changed(_WATCHED):
        return _report({"tampered": -1})

    def finish(memo: list[int] | None) -> tuple[dict, dict]:
        return _finish(
            header,
            ctx,
            store,
            free,
            strategies,
            flags,
            flag,
            played,
            batch,
            n,
            flat_entry,
            py_state,
            np_state,
            memo,
        )

    output = ctx.output
    output.by_seat = {}
    views = store.views(free.tolist())
    if use_memo:
        memo_out = _memo_rounds(
            game,
            desc,
            store,
            gstate,
            free,
            flat_entry,
            classes,
            entropies,
            scripted,
            played,
            virtual,
            strategies,
            acts,
            views,
            flag,
            prog,
            anonymous,
            origin,
        )
        if isinstance(memo_out, int):  # something was patched in that round: find who, unmemoised
            return _report({"tampered": memo_out})
        return finish([memo_out[0], memo_seats * played])
    code = ACTION_CODE.__getitem__
    flat = np.zeros(batch * n, dtype=bool)
    prog[SLOT_PHASE] = PLAYING
    for t in range(played):
        prog[SLOT_ROUND] = t
        for k in disabled.get(t, ()):
            acts[k] = _default
        pairs = list(zip(acts, views, strict=True))
        out: list[Any] = []
        append = out.append
        if audit == t or audit == "all":
            for k, (act, view) in enumerate(pairs):
                prog[SLOT_SEAT] = k
                try:
                    append(act(view))
                except BaseException as exc:  # noqa: BLE001
                    append(DEFAULT_ACTION)
                    flag(k, t, f"raised {_describe_exc(exc)}")
                if what := integrity.changed(_WATCHED):
                    return _report({"culprit": k, "round": t, "what": what})
        else:
            for k, (act, view) in enumerate(pairs):
                prog[SLOT_SEAT] = k
                try:
                    append(act(view))
                except BaseException as exc:  # noqa: BLE001
                    append(DEFAULT_ACTION)
                    flag(k, t, f"raised {_describe_exc(exc)}")
        try:
            answers = np.fromiter(map(code, out), dtype=bool, count=len(out))
        except BaseException:  # noqa: BLE001 - a bad answer (or a hostile __hash__)
            answers = _checked_answers(out, flag, t)
        cooperated = _round_actions(answers, scripted, flat, free, t, batch, n)
        pay, gstate = game.payoffs(cooperated, gstate)
        store.record(cooperated, pay, gstate)
        if audit is None and integrity.changed(_WATCHED):
            return _report({"tampered": t})
    return finish(None)


def _finish(
    header: dict[str, Any],
    ctx: Any,
    store: Any,
    free: np.ndarray,
    strategies: list[Any],
    flags: dict[int, list[Any]],
    flag: Any,
    played: int,
    batch: int,
    n: int,
    flat_entry: np.ndarray,
    py_state: Any,
    np_state: np.ndarray,
    memo: list[int] | None,
) -> tuple[dict, dict]:
    """The worker's answer: every seat's actions, who drew random numbers, the flags."""
    output = ctx.output
    limit = ctx.limits.output_chars
    for k, (t, chars) in output.by_seat.items():
        if chars > limit and 0 <= k < len(free):
            flag(k, t, f"wrote {chars} characters to stdout/stderr (kept at most {limit})")
    output.by_seat = None
    used = np.zeros(batch * n, dtype=bool)
    for k, s in enumerate(strategies):
        try:
            used[free[k]] = bool(s is not None and s.used_rng)
        except BaseException:  # noqa: BLE001
            used[free[k]] = True
    if random.getstate() != py_state or not np.array_equal(np.random.get_state()[1], np_state):
        untrusted = np.array([not t for t in header["trusted"]] + [False])
        used |= untrusted[flat_entry]  # -1 (scripted) picks the trailing False
    order = sorted(flags)
    return (
        {"reasons": [flags[k][1] for k in order], "memo": memo},
        {
            "actions": np.ascontiguousarray(store.actions[:, :, :played]),
            "used_rng": used.reshape(batch, n),
            "flag_seat": np.array(order, dtype=np.int64),
            "flag_round": np.array([flags[k][0] for k in order], dtype=np.int64),
            "flag_count": np.array([flags[k][2] for k in order], dtype=np.int64),
        },
    )


# -- memoisation of deterministic strategies (the worker's side) ---------------------------------
#
# A deterministic strategy's answer in round t is a function of its seat and the match so far
# (every player's actions; payoffs and stock follow from them by the rules).  Per (entry, game),
# a trie keyed by seat, then by each round's action vector, holds the answers seen so far, kept
# across the batches this worker plays (a self-play task, a generation of evolution).  A seat
# follows the trie without an instance while the answers are known; at the first unknown one it
# is built and replayed over the rounds so far on a private copy of its match's history, then
# plays on live (and its answers extend the trie).  Results are identical with and without.

#: memo tries: entry key -> [None, {seat: node}], node = [answer or None, {round key: node}]
_MEMO: dict[tuple[str, tuple[Any, ...]], list[Any]] = {}
_MEMO_NODES = [0]
#: the tries are dropped when they hold this many nodes (a bound on the worker's memory)
MEMO_MAX_NODES = 2_000_000
#: a seat that misses costs a replay of its match so far, one that never misses saves a whole
#: match: after MEMO_TRIAL misses from a start node, its seats are followed only while at least
#: one in MEMO_BREAK_EVEN of them reached the end without a miss (else they are built at once)
MEMO_TRIAL = 32
MEMO_BREAK_EVEN = 3


def _memo_root(key: str, sig: tuple[Any, ...]) -> list[Any]:
    if _MEMO_NODES[0] > MEMO_MAX_NODES:
        _MEMO.clear()
        _MEMO_NODES[0] = 0
    root = _MEMO.get((key, sig))
    if root is None:
        root = _MEMO[(key, sig)] = [None, {}]
    return root


def _memo_rounds(
    game: Any,
    desc: Any,
    store: Any,
    gstate: Any,
    free: np.ndarray,
    flat_entry: np.ndarray,
    classes: list[Any],
    entropies: np.ndarray,
    scripted: np.ndarray | None,
    played: int,
    virtual: dict[int, list[Any]],
    strategies: list[Any],
    acts: list[Any],
    views: list[Any],
    flag: Any,
    prog: Any,
    anonymous: set[int],
    origin: dict[int, list[Any]],
) -> tuple[int, int] | int:
    """The round loop with memoised seats: (answers taken from the memo, memo seat-rounds), or
    the round after which the integrity check failed."""
    from mesa_dilemmas.agents.strategies.history import HistoryStore

    n, horizon = game.n_players, game.n_rounds
    batch = len(flat_entry) // n
    free_list = free.tolist()
    # memo seats with an instance: their answers extend the trie
    tracking: dict[int, list[Any]] = {}
    private: dict[int, Any] = {}  # seat -> its own copy of its match's history (built on a miss)
    eligible = len(virtual) * played
    # seats whose round key is (own action, cooperators) rather than the whole action vector
    anon_seat = {k for k in virtual if flat_entry[free_list[k]] in anonymous}
    hits = 0
    answer_of = ("D", "C")
    flat = np.zeros(batch * n, dtype=bool)
    code = ACTION_CODE

    def untrack(k: int) -> None:  # a bad answer is not memoised
        tracking.pop(k, None)

    def materialise(k: int, t: int) -> None:
        j = free_list[k]
        b, i = divmod(j, n)
        prog[SLOT_SEAT] = k
        cls, params = classes[flat_entry[j]]
        if t == 0:  # nothing to replay: it plays on the batch's own history, like any seat
            try:
                inst = cls.create(desc, (int(entropies[b]), (i,)), params)
            except BaseException as exc:  # noqa: BLE001
                flag(k, -1, f"constructor raised {_describe_exc(exc)}")
                strategies[k], acts[k] = None, _default
                return
            strategies[k] = inst
            act = getattr(inst, "act", None)
            acts[k] = act if callable(act) else _default
            return
        own = HistoryStore(1, n, horizon, with_stock=game.HAS_STOCK)
        own.copy_match(store, b, t)
        try:
            inst = cls.create(desc, (int(entropies[b]), (i,)), params)
            view = own.player(0, i)
            for r in range(t):  # replay: the answers are the memo's (the strategy is deterministic)
                prog[SLOT_ROUND] = r
                own.seek(r)
                inst.act(view)
            own.seek(t)
        except BaseException as exc:  # noqa: BLE001
            flag(k, t, f"raised {_describe_exc(exc)} (replaying its match)")
            strategies[k], acts[k] = None, _default
            return
        prog[SLOT_ROUND] = t
        strategies[k] = inst
        act = getattr(inst, "act", None)
        acts[k] = act if callable(act) else _default
        try:
            kept = any(v is view for v in vars(inst).values())
        except BaseException:  # noqa: BLE001
            kept = True
        if kept:  # it holds on to its history object: that one must stay current
            views[k] = view
            private[k] = (own, b)
        # else it plays on with the batch's view of the same match (identical from here on)

    for t in range(played):
        prog[SLOT_ROUND] = t
        out: list[Any] = []
        append = out.append
        for k in range(len(acts)):
            node = virtual.get(k)
            if node is not None:
                if node[0] is not None:
                    append(answer_of[node[0]])
                    hits += 1
                    continue
                del virtual[k]
                tracking[k] = node
                materialise(k, t)
            prog[SLOT_SEAT] = k
            try:
                a = acts[k](views[k])
            except BaseException as exc:  # noqa: BLE001
                append(DEFAULT_ACTION)
                flag(k, t, f"raised {_describe_exc(exc)}")
                tracking.pop(k, None)
                continue
            append(a)
            node = tracking.get(k)
            if node is not None and node[0] is None and type(a) is str and a in code:
                node[0] = int(code[a])  # at once: later seats at the same point take it
        answers = _checked_answers(out, flag, t, untrack)
        cooperated = _round_actions(answers, scripted, flat, free, t, batch, n)
        pay, gstate = game.payoffs(cooperated, gstate)
        store.record(cooperated, pay, gstate)
        if integrity.changed(_WATCHED):
            return t
        for own, b in private.values():
            own.record(
                cooperated[b : b + 1], pay[b : b + 1], None if gstate is None else gstate[b : b + 1]
            )
        if virtual or tracking:
            rows = [row.tobytes() for row in cooperated]
            counts = cooperated.sum(axis=1).tolist()
            flat_coop = cooperated.reshape(-1).tolist()
            for seats in (virtual, tracking):
                for k, node in seats.items():
                    j = free_list[k]
                    key = counts[j // n] * 2 + flat_coop[j] if k in anon_seat else rows[j // n]
                    child = node[1].get(key)
                    if child is None:
                        child = node[1][key] = [None, {}]
                        _MEMO_NODES[0] += 1
                    seats[k] = child
    for k, start in origin.items():  # the tally: followed to the end, or built on a miss
        start[2][0 if k in virtual else 1] += 1
    return hits, eligible


# bindings checked after every round in the worker: taken when the worker imports this module at
# its start, before it loads any strategy code (this module and the engine's are watched too)
_WATCHED = integrity.watch([sys.modules[__name__], sys.modules[BinaryGame.__module__], BinaryGame])
