"""The model SolaraViz drives, and what a page tells it: how to build, play and show a game.

Mesa's ``SolaraViz`` owns the controls (Reset, Play, Step, the parameter inputs)
and re-creates the model class with the chosen parameters on Reset.  That class
is :class:`DashboardModel`, a thin Mesa model that *holds* a game rather than
being one, for four reasons:

* **failures stay on the page** -- a game that cannot be built from the chosen
  parameters (``k`` must be below the group size, an API key is missing, ...) or a
  round that raises leaves a readable ``error`` and a stopped model, never a dead
  app;
* **the page never freezes** -- with LLM agents a round can take minutes, so it is
  played in a worker thread; ``step()`` returns at once and a further Step or Play
  tick is ignored until the round is over (Mesa's clock advances only for rounds
  actually started);
* **panels never read a game mid-round** -- after every round the worker builds a
  plain-data *snapshot* (the page's ``snapshot`` function) and swaps it in; panels
  only ever read that;
* **pause means pause** -- Mesa's Play loop sleeps between ticks and then steps
  even when ❚❚ was pressed during the sleep (its Step branch); a tick from a Play
  loop that Solara has already replaced (:func:`play_tick`) is refused, so once
  the button shows ▶ no further round lands;
* **Play never outruns the page** -- a Play tick waits until the page has shown
  the previous round (:meth:`DashboardModel.shown`).  Otherwise, at Mesa's
  shortest interval, the loop changes state faster than another render (a click
  on ❚❚, a slider) can finish, and Solara gives up with "Too many renders";
* **the seed box** -- Mesa 3.5.1's seed input returns a string (and on Reset also
  hands over a ``Scenario``): :func:`coerce_seed` turns it into an int, a blank box
  into a fresh random seed that the page then shows, so any run can be repeated.
  The seed is a *scenario* seed: the game gets the seed ``mesa-dilemmas run`` gives
  replication 0 of a scenario with it (:func:`model_seed`).
"""

from __future__ import annotations

import math
import secrets
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import mesa

from mesa_dilemmas.viz.dashboard.llm_run import LLMChoice, LLMRun

#: how a page builds its game: (page parameters, seed, LLM spec or None) -> game
BuildFn = Callable[[dict[str, Any], int, "str | None"], Any]


def coerce_seed(value: Any) -> int | None:
    """The seed box's value as an int; ``None`` for a blank box (a fresh seed is drawn).

    Mesa 3.5.1 hands the seed over as the text of its input box; ints, numpy ints and
    whole-number floats pass through.  Anything else is a ``ValueError`` that the page
    shows instead of starting a run."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int | float) or hasattr(value, "__index__"):
        number = float(value)
    else:
        text = str(value).strip().replace("_", "")
        if not text:
            return None
        try:
            number = float(text)
        except ValueError:
            raise ValueError(f"seed: {value!r} is not a whole number") from None
    if not math.isfinite(number) or number != int(number) or number < 0:
        raise ValueError(f"seed: {value!r} is not a whole number >= 0")
    return int(number)


def model_seed(seed: int) -> int:
    """The seed a page builds its game with: that of replication 0 of a scenario with seed
    ``seed``, so ``mesa-dilemmas run`` on the page's saved scenario replays the page's game
    (see :mod:`.save_scenario`)."""
    from mesa_dilemmas.scenarios.batch import derive_seeds

    return derive_seeds(seed, 1)[0]


def play_tick() -> str | None:
    """Whether the caller is a tick of Mesa's Play loop: ``"current"``, ``"stale"`` or ``None``.

    Mesa's Play loop is a threaded Solara task with the play state as dependency:
    pressing ❚❚ starts a new run of the task (which returns at once), so the old
    loop's thread stops being current (``Task.is_current()``, the test Solara itself
    uses before a thread may still update state).  A tick that the old loop sends
    after its sleep -- Mesa steps then whatever the button says -- is stale.  Calls
    from anywhere else (the Step button, a script) are not ticks."""
    from solara.tasks import TaskThreaded

    frame = sys._getframe(1)
    while frame is not None:
        owner = frame.f_locals.get("self")
        if isinstance(owner, TaskThreaded):
            return "current" if owner.is_current() else "stale"
        frame = frame.f_back
    return None


@dataclass(frozen=True)
class GamePage:
    """What one dashboard page is: its controls, how it builds and snapshots its game, its panels.

    ``controls`` returns Mesa user-input specs (see :mod:`.controls`); the values
    come back as keyword arguments of :class:`DashboardModel`.  ``build`` makes the
    game (any object with ``step()`` and ``running``; usually a Mesa model);
    ``snapshot`` turns it into plain data for ``panels`` (a Solara component
    taking ``view`` and ``model``); ``llm_agents`` says how many LLM agents the
    parameters ask for (0: no LLM controls matter, rounds are played inline)."""

    path: str
    title: str
    summary: str
    controls: Callable[[], dict[str, Any]]
    build: BuildFn
    snapshot: Callable[[Any], Any]
    panels: Callable[..., Any]
    llm_agents: Callable[[dict[str, Any]], int] = lambda params: 0
    round_of: Callable[[Any], int] = lambda game: int(getattr(game, "round", 0))
    agent_labels: Callable[[Any], dict[int, str]] = lambda game: default_agent_labels(game)
    #: what one Step plays ("round"; "generation" for cultural evolution)
    unit: str = "round"
    #: where the page sits in the menu (lower first; ties by path)
    order: int = 100
    #: "save as scenario": the scenario's body (TOML data: ``params``, ``strategies``,
    #: ``population``, ``llm``, ``max_steps``) for the game a :class:`DashboardModel` shows;
    #: None: the page's parameters are the game's own (see :mod:`.save_scenario`)
    scenario_of: Callable[[Any], dict[str, Any]] | None = None


def default_agent_labels(game: Any) -> dict[int, str]:
    """``agent 3 (llm:local)`` for every agent of a Mesa model (none for other games)."""
    agents = getattr(game, "agents", None) or ()
    return {
        a.unique_id: f"agent {a.unique_id} ({getattr(getattr(a, 'policy', None), 'name', '?')})"
        for a in agents
    }


@dataclass
class RoundJob:
    """A round being played in the worker thread."""

    round: int
    started: float = field(default_factory=time.monotonic)
    done: threading.Event = field(default_factory=threading.Event)


class DashboardModel(mesa.Model):
    """Holds one game for the dashboard; SolaraViz re-creates it on Reset (see the module doc)."""

    def __init__(
        self,
        *,
        page: GamePage,
        rng: Any = None,
        scenario: Any = None,  # Mesa's Reset passes one; the seed comes from ``rng``
        **params: Any,
    ) -> None:
        error: str | None = None
        try:
            seed = coerce_seed(rng if rng is not None else getattr(scenario, "rng", None))
        except ValueError as exc:
            seed, error = None, str(exc)
        #: the seed box held no seed (blank: one was drawn) -- but not when its text was invalid
        self.seed_drawn = seed is None and error is None
        self.seed_invalid = error is not None
        self.seed: int = secrets.randbelow(2**31) if seed is None else seed
        super().__init__(rng=self.seed)
        self.page = page
        self.llm_choice = LLMChoice.from_params(params)
        self.params = {k: v for k, v in params.items() if k not in LLMChoice.KEYS}
        self.error: str | None = error
        self.detail: str | None = None
        self.game: Any = None
        self.llm: LLMRun | None = None
        self.view: Any = None
        self.version = 0
        self.job: RoundJob | None = None
        self.agent_labels: dict[int, str] = {}
        self.llm_agent_ids: set[int] = set()
        #: the broker's per-agent, per-kind decision counts as of the last finished round
        self.decision_stats: list[dict[str, Any]] = []
        self.uid = secrets.token_hex(4)
        #: Play ticks refused because ❚❚ had been pressed (see ``play_tick``)
        self.refused_ticks = 0
        #: the last snapshot version the page has rendered (see ``shown``)
        self.shown_version = 0
        self._shown = threading.Condition()
        self._round = 0
        #: the round that failed, if the last one did (the page stays at the round before)
        self.failed_round: int | None = None
        self.closed = False
        self._lock = threading.Lock()
        if self.error is None:
            self._build()
        self._publish()
        # Mesa's clock advances only for rounds actually started (see ``_step_if_ready``)
        self.step = self._step_if_ready  # type: ignore[method-assign]

    # -- building ----------------------------------------------------------
    @property
    def n_llm_agents(self) -> int:
        return int(self.page.llm_agents(self.params))

    def _build(self) -> None:
        spec = None
        try:
            if self.n_llm_agents > 0:
                spec = self.llm_choice.spec
                self.llm = LLMRun.start(self.llm_choice)
            self.game = self.page.build(dict(self.params), model_seed(self.seed), spec)
            self.agent_labels = self.page.agent_labels(self.game)
            self.llm_agent_ids = {
                a.unique_id
                for a in getattr(self.game, "agents", None) or ()
                if str(getattr(a.policy, "name", "")).startswith("llm:")
            }
        except Exception as exc:
            self._fail("could not start the game", exc)

    def _fail(self, what: str, exc: BaseException) -> None:
        message = str(exc).strip() or type(exc).__name__
        self.error = f"{what}: {message}"
        self.detail = "".join(traceback.format_exception(exc))
        self.running = False

    # -- playing -----------------------------------------------------------
    @property
    def busy(self) -> bool:
        """True while a round is being played in the worker thread."""
        job = self.job
        return job is not None and not job.done.is_set()

    @property
    def token(self) -> str:
        """Changes whenever the snapshot does (charts are redrawn only then)."""
        return f"{self.uid}:{self.version}"

    @property
    def round(self) -> int:
        """The round the snapshot shows (a round in flight counts once it is published)."""
        return self._round

    @property
    def game_running(self) -> bool:
        return self.game is not None and self.error is None and bool(self.game.running)

    def shown(self, version: int) -> None:
        """The page calls this once it has rendered snapshot ``version`` (a Play tick waits for it)."""
        with self._shown:
            self.shown_version = max(self.shown_version, version)
            self._shown.notify_all()

    #: how long a Play tick waits for the page to show the previous round
    SHOWN_TIMEOUT_S = 5.0

    def _step_if_ready(self) -> None:
        tick = play_tick()
        if tick == "current":
            with self._shown:
                self._shown.wait_for(
                    lambda: self.shown_version >= self.version, self.SHOWN_TIMEOUT_S
                )
            tick = play_tick()  # ❚❚ may have been pressed meanwhile
        if tick == "stale":
            self.refused_ticks += 1
            return
        if self.closed or self.busy or not self.game_running:
            self.running = self.busy or self.game_running
            return
        self.run_for(1)  # Mesa advances its clock and calls the step method

    def step(self) -> None:
        """Play one round: inline for rule agents, in a worker thread with LLM agents."""
        if self.llm is None:
            self._play_round()
            return
        job = RoundJob(self.page.round_of(self.game) + 1)
        self.job = job
        threading.Thread(
            target=self._play_round, args=(job,), name="dashboard-round", daemon=True
        ).start()

    def _play_round(self, job: RoundJob | None = None) -> None:
        failed = False
        try:
            if self.llm is not None:
                self.llm.activate()
            self.game.step()
        except Exception as exc:
            failed = True
            self.failed_round = self._round + 1
            self._fail(f"{self.page.unit} {self._round + 1} failed", exc)
        finally:
            if not self.closed:
                self._publish(failed=failed)
            if job is not None:
                job.done.set()
            if self.closed and self.llm is not None:
                self.llm.close()

    def _publish(self, failed: bool = False) -> None:
        """Snapshot the game for the panels (never raises: a broken view is an error too).

        After a failed round the page keeps showing the last round played: Mesa's clock has
        already moved on, but nothing of the failed round counts."""
        view = None
        if self.game is not None:
            try:
                view = self.page.snapshot(self.game)
            except Exception as exc:
                self._fail("could not read the game's state", exc)
        broker = getattr(self.game, "broker", None)
        stats = broker.stats.records() if broker is not None else []
        played = 0 if self.game is None else self.page.round_of(self.game)
        if failed:
            played = min(played, self._round)
        with self._lock:
            self.view = view
            self.decision_stats = stats
            self._round = played
            self.version += 1
        self.running = self.game_running

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the round in flight (if any) is over; False on timeout."""
        job = self.job
        return True if job is None else job.done.wait(timeout)

    def close(self) -> None:
        """Called when the page replaces this model (Reset): drop LLM records once idle."""
        self.closed = True
        if not self.busy and self.llm is not None:
            self.llm.close()
