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
found by an identity check after every round (:mod:`mesa_dilemmas.sandbox.integrity`); the round is
then replayed with the check after every call to find who did it.

Global random state: the worker seeds Python's ``random`` and numpy's global
generator at the start of every batch from the batch's entropies, so strategies
that use them are reproducible; batches are fixed by the experiments' task
decomposition, never by the number of processes.
"""

from __future__ import annotations

import contextlib
import gc
import random
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from mesa_dilemmas.dilemmas.binary.engine import BatchResult, play_in_process
from mesa_dilemmas.dilemmas.binary.rules import BinaryGame, make_game
from mesa_dilemmas.dilemmas.binary.strategies import base as _base
from mesa_dilemmas.dilemmas.binary.strategies import history as _history
from mesa_dilemmas.dilemmas.binary.strategies.base import ACTION_CODE
from mesa_dilemmas.dilemmas.binary.strategies.loader import StrategyEntry, entry_class
from mesa_dilemmas.sandbox import (
    WorkerLost,
    get_limits,
    integrity,
    protocol,
    register_handler,
    sandbox_for,
)
from mesa_dilemmas.sandbox import worker as _worker_module
from mesa_dilemmas.sandbox.worker import (
    BUILDING,
    IDLE,
    LOADING,
    PLAYING,
    SLOT_PHASE,
    SLOT_ROUND,
    SLOT_SEAT,
)

#: what a misbehaving strategy plays in a round it failed (the fallback of an LLM decision too)
DEFAULT_ACTION = "D"
register_handler("play", "mesa_dilemmas.dilemmas.binary.sandboxed:sandbox_play")


@dataclass(frozen=True)
class Flag:
    """A strategy misbehaved: where first, how often in the batch, and why."""

    strategy: str
    match: int
    seat: int
    round: int  # 0-based; -1: while being built
    reason: str
    count: int = 1


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


def _unit(entry: StrategyEntry) -> str:
    """The unit of trust of an entry's code: its file (trusted entries: one unit of their own).
    Code of two units never runs in the same worker interpreter."""
    return "trusted" if entry.trusted else f"file:{entry.module}"


class _Part:
    """The seats of one unit of trust in a batch, played by that unit's own worker."""

    def __init__(
        self, key: str, members: list[int], seat_entry: np.ndarray, free: np.ndarray, n_entries: int
    ) -> None:
        self.key = key
        self.members = members  # global entry indices, in local order
        self.local = {g: k for k, g in enumerate(members)}
        lut = np.full(n_entries + 1, -1, dtype=np.int32)  # index -1 (scripted) -> -1
        lut[members] = np.arange(len(members), dtype=np.int32)
        self.lineups = lut[seat_entry]
        mine = self.lineups.reshape(-1) >= 0
        self.seats = np.flatnonzero(mine)  # flat seats, in the worker's free-seat order
        self.free = np.flatnonzero(mine[free])  # their global free-seat indices
        self.free_of = {int(g): k for k, g in enumerate(self.free.tolist())}
        self.box: Any = None
        self.busy = False  # a request is in flight
        self.awaiting = False  # it sent a round and waits for the run's reply

    def header(self, base: dict[str, Any], state: dict[str, Any]) -> dict[str, Any]:
        """This part's request: its own entries and seats only (global -> local indices)."""
        m = self.members
        return {
            **base,
            "entries": [base["entries"][g] for g in m],
            "trusted": [base["trusted"][g] for g in m],
            "memo": [base["memo"][g] for g in m],
            "anonymous": [base["anonymous"][g] for g in m],
            "skip_entries": [self.local[g] for g in state["skip"] if g in self.local],
            "disabled": [[self.free_of[k], t] for k, t in state["disabled"] if k in self.free_of],
            "audit_round": state["audit"].get(self.key),
        }


def _arr(got: dict[str, np.ndarray], name: str, shape: tuple[int, ...], kinds: str) -> np.ndarray:
    a = got.get(name)
    if a is None or a.shape != shape or a.dtype.kind not in kinds:
        raise ValueError(f"{name} missing or of the wrong shape or type")
    return a


def _check_final(
    out: dict[str, Any], got: dict[str, np.ndarray], part: _Part, batch: int, n: int, played: int
) -> tuple[np.ndarray | None, np.ndarray, list[tuple[int, int, int, str]], list[int]]:
    """A part's answer, checked field by field: (actions or None, used_rng of its seats, flags
    as (global free-seat index, round, count, reason), memo counts).  Raises ValueError."""
    actions = None
    if "actions" in got:
        actions = _arr(got, "actions", (batch, n, played), "iub")
        if actions.dtype.kind != "b" and ((actions != 0) & (actions != 1)).any():
            raise ValueError("actions other than 0 and 1")
    used = _arr(got, "used_rng", (batch, n), "b").reshape(-1)[part.seats]
    m = len(got.get("flag_seat", ()))
    seats = _arr(got, "flag_seat", (m,), "i").tolist()
    rounds_ = _arr(got, "flag_round", (m,), "i").tolist()
    counts = _arr(got, "flag_count", (m,), "i").tolist()
    which = _arr(got, "flag_reason", (m,), "i").tolist()
    reasons = out.get("reasons")
    if not isinstance(reasons, list) or not all(isinstance(r, str) for r in reasons):
        raise ValueError("reasons are not a list of texts")
    flags = []
    for k, t, c, w in zip(seats, rounds_, counts, which, strict=True):
        if not (0 <= k < len(part.free) and -1 <= t < played and 0 <= w < len(reasons)):
            raise ValueError("a flag names a seat, round or reason that does not exist")
        flags.append((int(part.free[k]), int(t), max(1, int(c)), reasons[w][:500]))
    memo = out.get("memo") or [0, 0]
    if (
        not isinstance(memo, list)
        or len(memo) != 2
        or not all(type(x) is int and 0 <= x < 1 << 62 for x in memo)
    ):
        raise ValueError("memo counts are not two counts")
    return actions, used, flags, memo


#: per entry over the process: [wall seconds spent idle (sleeping, blocking), CPU seconds]
_idle: dict[str, list[float]] = {}


def play_sandboxed(
    game: BinaryGame,
    lineups: Sequence[Sequence[StrategyEntry | None]],
    entropies: Sequence[int],
    scripted: np.ndarray | None,
    rounds: int | None,
    keep_history: bool,
) -> BatchResult:
    """:func:`~mesa_dilemmas.dilemmas.binary.game.play_batch` for batches with untrusted strategies.

    Each unit of trust (a strategy file; the trusted entries) plays its seats in its own worker.
    A batch of one unit is played whole there; a batch of several is played in lockstep: every
    round each worker answers for its own seats, and this process assembles the round and sends
    it back to all of them, so no unit's code can see or change another's moves."""
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
    flat_entry = seat_entry.reshape(-1)
    free = np.flatnonzero(flat_entry >= 0)
    units: dict[str, list[int]] = {}
    for k, e in enumerate(entries):
        units.setdefault(_unit(e), []).append(k)
    parts = [_Part(key, m, seat_entry, free, len(entries)) for key, m in units.items()]
    lockstep = len(parts) > 1
    base: dict[str, Any] = {
        "game": game.NAME,
        "n": n,
        "horizon": horizon,
        "rounds": played,
        "params": game.params(),
        "entries": [e.ref() for e in entries],
        "trusted": [e.trusted for e in entries],
        # deterministic entries (known from their checks): answers memoised by history
        "memo": [bool(MEMOISE and e.deterministic) for e in entries],
        "anonymous": [bool(e.anonymous) for e in entries],
        "lockstep": lockstep,
    }
    state: dict[str, Any] = {"skip": [], "disabled": [], "audit": {}}
    ent_arr = np.asarray(entropies, dtype=np.int64)
    sc = None if scripted is None else (np.asarray(scripted)[:, :, :horizon] > 0).astype(np.int8)
    lost_flags: dict[int, tuple[int, str]] = {}  # global free-seat index -> (round, reason)
    entry_flags: dict[int, str] = {}
    keys = [_key(e) for e in entries]
    entry_of_free = flat_entry[free]

    def skip(e: int, why: str) -> None:
        if e not in state["skip"]:
            state["skip"].append(e)
        entry_flags.setdefault(e, why)

    def note_loss(e: int, why: str) -> None:
        _losses.setdefault(keys[e], []).append(why)
        if len(_losses[keys[e]]) >= QUARANTINE_AFTER:
            skip(e, f"quarantined: {_losses[keys[e]][0]}")

    for k, key in enumerate(keys):
        if len(_losses.get(key, ())) >= QUARANTINE_AFTER:
            skip(k, f"quarantined: {_losses[key][0]} (and {len(_losses[key]) - 1} more)")
    limits = get_limits()
    budget = max(1.0, limits.match_cpu * max(1, batch) * (played / max(1, horizon)))
    final_bytes = protocol.MAX_HEADER + 64 * batch * n * (played + 2) + 4096
    step_bytes = protocol.MAX_HEADER + batch * n + 4096
    unit_keys = frozenset(units)

    def charger(part: _Part) -> Any:
        """Idle time (wall clock beyond CPU) of each call, charged to the entry the part's
        progress page names (within the part only): a sleeper is stopped by its budget."""

        def charge(progress: tuple[int, ...], wall: float, cpu: float) -> None:
            seat, phase = progress[SLOT_SEAT], progress[SLOT_PHASE]
            if phase not in (BUILDING, PLAYING) or not 0 <= seat < len(part.free):
                return
            e = int(entry_of_free[part.free[seat]])
            got = _idle.setdefault(keys[e], [0.0, 0.0])
            got[0] += max(0.0, wall - max(cpu, 0.0))
            got[1] += max(cpu, 0.0)
            if got[0] > limits.strategy_idle + limits.idle_factor * got[1]:
                part.box.lose(
                    f"exceeded its budget of {limits.strategy_idle:g} s of wall-clock time "
                    "spent not computing over the run (it slept or blocked)",
                    progress,
                    protocol=False,
                )

        return charge

    def blame_part(part: _Part, why: str) -> None:
        """A breach the run cannot pin on one strategy: the whole unit, as the run knows it."""
        for g in part.members:
            if not entries[g].trusted:
                skip(g, why)
                _losses.setdefault(keys[g], []).append(why)

    def abort(part: _Part) -> None:
        """Call off a part's request (another part failed); a worker that will not stop ends."""
        if not part.busy:
            return
        part.busy = False
        try:
            if part.awaiting:
                part.box.reply({"abort": True})
            for _ in range(3):
                msg, _ = part.box.receive(step_bytes)
                if not msg.get("step"):
                    return
                part.box.reply({"abort": True})
        except WorkerLost:
            return
        part.box.close()

    def lost(part: _Part, exc: WorkerLost) -> None:
        seat, t, phase = (
            exc.progress[SLOT_SEAT],
            exc.progress[SLOT_ROUND],
            exc.progress[SLOT_PHASE],
        )
        if exc.protocol:
            blame_part(part, f"its file's worker {exc.reason}")
        elif phase == LOADING and 0 <= seat < len(part.members):
            skip(part.members[seat], f"loading its code {exc.reason}")
        elif phase in (BUILDING, PLAYING) and 0 <= seat < len(part.free):
            k = int(part.free[seat])
            t = -1 if phase == BUILDING else min(max(t, 0), played - 1)
            state["disabled"].append([k, t])
            lost_flags.setdefault(k, (t, exc.reason))
            note_loss(int(entry_of_free[k]), exc.reason)
        elif state["audit"].get(part.key) != "all":  # lost between calls: check after every call
            state["audit"][part.key] = "all"
        else:
            blame_part(part, f"its file's worker {exc.reason} outside any strategy call")

    def final(part: _Part, out: dict[str, Any]) -> bool:
        """Act on a part's report of tampering or an engine failure; True: replay the batch."""
        if "error" in out:  # the engine failed in the worker: blame whoever was playing
            progress = out.get("progress")
            if not (
                isinstance(progress, list)
                and len(progress) == 3
                and all(type(x) is int for x in progress)
            ):
                progress = [-1, -1, -1]
            why = f"broke the engine ({str(out['error'])[:200]})"
            part.box.close()
            lost(part, WorkerLost(why, (*progress, 0, 0, 0, 0, 0)))
            return True
        if "tampered" in out:  # find who: replay the round with the check after every call
            t = out["tampered"]
            if type(t) is not int or not -2 <= t < played:
                part.box.close()
                blame_part(part, "its file's worker sent a malformed tamper report")
                return True
            if state["audit"].get(part.key) is not None:  # checked after every call already
                part.box.close()
                blame_part(part, "its file's worker reported tampering no call made")
                state["audit"].pop(part.key, None)
                return True
            state["audit"][part.key] = t
            part.box.close()
            return True
        if "culprit" in out:
            seat, t = out.get("culprit"), out.get("round")
            what = str(out.get("what", "?"))[:200]
            part.box.close()
            if type(seat) is not int or type(t) is not int or not -1 <= t < played:
                blame_part(part, "its file's worker sent a malformed tamper report")
            elif out.get("phase") == "loading" and 0 <= seat < len(part.members):
                skip(part.members[seat], f"patched {what} when loaded")
            elif 0 <= seat < len(part.free):
                k = int(part.free[seat])
                if [k, t] in state["disabled"]:  # stopped already: the report was forged
                    blame_part(part, "its file's worker named a culprit that no longer plays")
                else:
                    state["disabled"].append([k, t])
                    lost_flags.setdefault(k, (t, f"patched {what}"))
            else:
                blame_part(part, "its file's worker named no valid culprit")
            state["audit"].pop(part.key, None)
            return True
        return False

    results: dict[str, tuple[Any, ...]] = {}
    actions_all = np.zeros((batch, n, horizon), dtype=np.int8)
    scripted_idx = np.flatnonzero(flat_entry < 0)
    patience = len(free) + 2 * len(entries) + 4 * len(parts) + 4
    failures: dict[str, int] = {}  # unit -> attempts it made fail
    for attempt in range(patience + 4):
        if attempt == patience:  # something keeps failing that no strategy call explains
            worst = max(failures.values(), default=0)
            for part in parts:
                if worst and failures.get(part.key) == worst:
                    blame_part(part, "its file's worker kept failing outside any strategy call")
        results.clear()
        for part in parts:
            part.box = sandbox_for(part.key, unit_keys)
        current: _Part | None = None
        try:
            for part in parts:
                current = part
                arrays = {"lineups": part.lineups, "entropies": ent_arr}
                if sc is not None and not lockstep:
                    arrays["scripted"] = sc
                part.box.begin("play", part.header(base, state), arrays, budget)
                part.busy, part.awaiting = True, False
            done = not lockstep
            matrix = np.zeros(batch * n, dtype=bool)
            for t in range(played if lockstep else 0):
                if len(scripted_idx):
                    assert sc is not None
                    matrix[scripted_idx] = sc[:, :, t].reshape(-1)[scripted_idx] > 0
                for part in parts:
                    current = part
                    msg, got = part.box.receive(step_bytes, charger(part))
                    if not msg.get("step"):
                        part.busy = False
                        if not final(part, msg):
                            part.box.lose("ended its matches early")
                        raise _Replay
                    part.awaiting = True
                    answers = got.get("answers")
                    if (
                        msg.get("round") != t
                        or answers is None
                        or answers.dtype != np.bool_
                        or answers.shape != (len(part.seats),)
                    ):
                        part.box.lose("sent a round out of turn or of the wrong shape")
                    matrix[part.seats] = answers
                whole = matrix.reshape(batch, n).astype(np.int8)
                actions_all[:, :, t] = whole
                for part in parts:
                    current = part
                    part.box.reply({"round": t}, {"round": whole})
                    part.awaiting = False
            done = True
            for part in parts:
                current = part
                out, got = part.box.receive(final_bytes, charger(part))
                part.busy = False
                if out.get("step"):
                    part.box.lose("played more rounds than asked")
                if final(part, out):
                    raise _Replay
                try:
                    results[part.key] = (out, *_check_final(out, got, part, batch, n, played))
                except (ValueError, TypeError) as exc:
                    part.box.lose(f"sent an answer that does not check ({exc})")
                err = part.box.err_bytes
                if err > limits.output_chars and part.key != "trusted":
                    for g in part.members:
                        entry_flags.setdefault(
                            g,
                            f"its file's code wrote {err} bytes to stderr (kept at most "
                            f"{limits.output_chars})",
                        )
        except WorkerLost as exc:
            assert current is not None
            failures[current.key] = failures.get(current.key, 0) + 1
            current.busy = False
            lost(current, exc)
            for part in parts:
                abort(part)
            continue
        except _Replay:
            assert current is not None
            failures[current.key] = failures.get(current.key, 0) + 1
            for part in parts:
                abort(part)
            continue
        except BaseException:
            for part in parts:
                with contextlib.suppress(BaseException):
                    part.box.close()
            raise
        assert done
        break
    else:
        raise RuntimeError("sandbox: giving up on a batch after too many lost workers")
    if not lockstep:
        acts = results[parts[0].key][1]
        actions_all[:, :, :played] = acts
    used = np.zeros(batch * n, dtype=bool)
    flags_found: list[tuple[int, int, int, str]] = []
    hits = eligible = 0
    for part in parts:
        out, _acts, used_part, flags, memo = results[part.key]
        used[part.seats] = used_part
        flags_found += flags
        hits += memo[0]
        eligible += memo[1]
    gc_was = gc.isenabled()
    gc.disable()
    try:
        result = play_in_process(
            game, [[None] * n] * batch, entropies, actions_all, played, keep_history
        )
    finally:
        if gc_was:
            gc.enable()
    result.used_rng = used.reshape(batch, n)
    result.flags = _flags(flags_found, lost_flags, entry_flags, entries, flat_entry, free, n)
    result.memo_hits, result.memo_eligible = hits, eligible
    return result


class _Replay(Exception):
    """A part reported tampering or an engine failure: the batch is played again."""


def _flags(
    found_in_workers: list[tuple[int, int, int, str]],
    lost: dict[int, tuple[int, str]],
    entry_flags: dict[int, str],
    entries: list[StrategyEntry],
    flat_entry: np.ndarray,
    free: np.ndarray,
    n: int,
) -> list[Flag]:
    found: dict[int, Flag] = {}
    for k, t, c, why in found_in_workers:
        b, i = divmod(int(free[k]), n)
        found[k] = Flag(entries[flat_entry[free[k]]].name, b, i, t, why, c)
    for k, (t, why) in lost.items():
        b, i = divmod(int(free[k]), n)
        found[k] = Flag(entries[flat_entry[free[k]]].name, b, i, t, why, 1)
    for k in range(len(free)):
        e = flat_entry[free[k]]
        if e in entry_flags:
            flag = found.get(k)
            b, i = divmod(int(free[k]), n)
            found[k] = Flag(
                entries[e].name, b, i, -1, entry_flags[e], 1 if flag is None else flag.count
            )
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


class _Tampered(Exception):  # noqa: N818 - a report, not an error
    """Something was patched in round ``args[0]`` (found before the round was sent)."""


def sandbox_play(
    header: dict[str, Any], arrays: dict[str, np.ndarray], ctx: Any
) -> tuple[dict, dict]:
    """Play one batch in the worker (the ``"play"`` handler)."""
    gc.disable()
    try:
        return _sandbox_play(header, arrays, ctx)
    except _Tampered as found:
        return _report({"tampered": int(found.args[0])})
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
    _reseed_entropy(int(state[1]) << 32 | int(state[0]), prog)

    from mesa_dilemmas.dilemmas.binary.strategies.history import HistoryStore

    lockstep = bool(header.get("lockstep"))
    flat_all = np.zeros(batch * n, dtype=bool)
    free_seats = np.flatnonzero(seat_entry.reshape(-1) >= 0)

    def step(answers: np.ndarray, t: int) -> np.ndarray:
        """Round t's actions: this worker's answers among the scripted seats, or (lockstep)
        the round as the run assembled it from every worker's answers."""
        if not lockstep:
            return _round_actions(answers, scripted, flat_all, free_seats, t, batch, n)
        if audit is None and integrity.changed(_WATCHED):  # before anything is sent
            raise _Tampered(t)
        _, got = ctx.exchange({"round": t}, {"answers": np.ascontiguousarray(answers, bool)})
        whole = got.get("round")
        if whole is None or whole.shape != (batch, n):
            raise ValueError("the run sent a round of the wrong shape")
        return whole.astype(bool)

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
        answer = _finish(
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
        # instances are let go one at a time with their seat on the progress page, so a
        # finaliser (__del__) that stalls is stopped by the call limits and blamed on its owner
        prog[SLOT_PHASE] = PLAYING
        prog[SLOT_ROUND] = max(played - 1, 0)
        for k in range(len(strategies)):
            prog[SLOT_SEAT] = k
            acts[k] = strategies[k] = None
        prog[SLOT_PHASE] = IDLE
        return answer

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
            step,
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
        cooperated = step(answers, t)
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
    for k in _Entropy.drew:  # drew from the (cut) entropy sources: stochastic
        if 0 <= k < len(free):
            used[free[k]] = True
    _Entropy.page = None
    if random.getstate() != py_state or not np.array_equal(np.random.get_state()[1], np_state):
        untrusted = np.array([not t for t in header["trusted"]] + [False])
        used |= untrusted[flat_entry]  # -1 (scripted) picks the trailing False
    order = sorted(flags)
    reasons: dict[str, int] = {}  # each distinct reason once (the answer's header stays small)
    which = [reasons.setdefault(str(flags[k][1])[:300], len(reasons)) for k in order]
    return (
        {"reasons": list(reasons), "memo": memo},
        {
            "actions": np.ascontiguousarray(store.actions[:, :, :played]),
            "used_rng": used.reshape(batch, n),
            "flag_seat": np.array(order, dtype=np.int64),
            "flag_round": np.array([flags[k][0] for k in order], dtype=np.int64),
            "flag_count": np.array([flags[k][2] for k in order], dtype=np.int64),
            "flag_reason": np.array(which, dtype=np.int64),
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
    step: Any,
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
    from mesa_dilemmas.dilemmas.binary.strategies.history import HistoryStore

    n, horizon = game.n_players, game.n_rounds
    free_list = free.tolist()
    # memo seats with an instance: their answers extend the trie
    tracking: dict[int, list[Any]] = {}
    private: dict[int, Any] = {}  # seat -> its own copy of its match's history (built on a miss)
    eligible = len(virtual) * played
    # seats whose round key is (own action, cooperators) rather than the whole action vector
    anon_seat = {k for k in virtual if flat_entry[free_list[k]] in anonymous}
    hits = 0
    answer_of = ("D", "C")
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
        cooperated = step(answers, t)
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


# -- entropy: cut off in the worker -------------------------------------------------------------
#
# Unseeded generators (``np.random.default_rng()``, ``random.Random()``, ``random.seed()``,
# ``SystemRandom``, ``secrets``, ``os.urandom``) draw from one stream seeded from the batch's
# entropies, so a strategy that uses them plays the same under the same seed; the seats that drew
# from it are reported as having used random numbers (``used_rng``: stochastic in the data).
# Clock readings and object addresses are not cut (docs/sandbox.md).


class _Entropy:
    source = random.Random(0)
    drew: set[int] = set()
    page: Any = None


def _note_draw() -> None:
    page = _Entropy.page
    if page is not None and page[SLOT_PHASE] in (BUILDING, PLAYING):
        _Entropy.drew.add(int(page[SLOT_SEAT]))


def _cut_entropy() -> None:
    """Replace the process's entropy sources by :class:`_Entropy`'s stream (a worker only,
    before the integrity snapshot, so the replacements are what is watched)."""
    import os
    import secrets

    import numpy.random.bit_generator as bit_generator

    def randbits(k: int) -> int:
        _note_draw()
        return _Entropy.source.getrandbits(k)

    def urandom(size: int) -> bytes:
        _note_draw()
        return _Entropy.source.randbytes(size)

    seed_original = random.Random.seed

    def seed(self: random.Random, a: Any = None, version: int = 2) -> None:
        if a is None:
            _note_draw()
            a = _Entropy.source.getrandbits(128)
        seed_original(self, a, version)

    bit_generator.randbits = randbits  # type: ignore[attr-defined]
    secrets.randbits = randbits
    os.urandom = urandom
    random.Random.seed = seed  # type: ignore[method-assign]
    random.seed = random._inst.seed  # type: ignore[attr-defined]
    random.SystemRandom.random = lambda self: (_note_draw(), _Entropy.source.random())[1]  # type: ignore[method-assign]
    random.SystemRandom.getrandbits = lambda self, k: randbits(k)  # type: ignore[method-assign]
    random.SystemRandom.randbytes = lambda self, n: urandom(n)  # type: ignore[method-assign]


def _reseed_entropy(seed: int, page: Any) -> None:
    """At a batch's start: the stream seeded from the batch, no draws noted yet."""
    _Entropy.source = random.Random(seed)
    _Entropy.drew = set()
    _Entropy.page = page


if _worker_module.IN_WORKER:
    _cut_entropy()

# bindings checked after every round in the worker: taken when the worker imports this module at
# its start, before it loads any strategy code (this module and the engine's are watched too)
_WATCHED = integrity.watch(
    [
        _base,
        _history,
        _base.Strategy,
        _history.HistoryStore,
        _history.PlayerHistory,
        sys.modules[__name__],
        sys.modules[BinaryGame.__module__],
        BinaryGame,
    ]
)
