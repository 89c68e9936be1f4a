"""Where an experiment's tasks run: a local process pool (the default) or a Ray cluster.

Every experiment splits its work into independent tasks -- chunks of runs (grid cells x
replications) of a batch sweep, the splits of a self-play, the runs of a cultural evolution,
the strategies of an analysis -- and hands them to :func:`map_tasks`.  The backend only
decides *where* a task runs; each task carries its own seeds, so results are identical with
any backend and any number of workers.

``local``
    a pool of spawned worker processes on this machine (``processes``), no Ray needed.
``ray``
    Ray tasks: on a local Ray instance sized to ``workers`` (started and stopped by the run), or
    on an existing cluster (``address = "auto"`` or ``"ray://head:10001"``).  A worker process
    killed mid-task is retried by Ray up to ``max_retries`` times; a task that keeps failing
    stops the run with a message naming it, after everything finished so far was handed to the
    experiment's ``on_result`` (which saves it, so ``--resume`` re-runs only what is missing).

The run's LLM session (:mod:`mesa_dilemmas.llm.session`) travels with the tasks: the session
file of the run active in the driver's context is sent with every task, and the worker runs the
task inside ``with session.use(path):`` (a worker inherits no run from its environment); on Ray
the name of the run's LLM gate travels the same way.  The settings in force are a context
variable (``use`` sets them for what runs inside), not a module global.

Ray is an optional extra (``pip install mesa-dilemmas[ray]``), imported only when asked for.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from contextvars import ContextVar
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

OnResult = Callable[[int, Any], None]


class ExecutionSettings(BaseModel):
    """A scenario's ``[execution]`` table (``--backend`` / ``--address`` on the command line)."""

    model_config = ConfigDict(extra="forbid")

    backend: Literal["local", "ray"] = "local"
    #: a Ray cluster to join ("auto", "ray://host:10001"); None starts a local Ray instance
    address: str | None = None
    #: Ray workers for a local instance (default: the run's processes)
    workers: Annotated[int, Field(ge=1, le=4096, strict=True)] | None = None
    #: retries of a Ray task whose worker died (a task that raises is not retried)
    max_retries: Annotated[int, Field(ge=0, le=100, strict=True)] = 3
    #: how a batch runs its models: the game's vectorised engine where it applies ("auto"), only
    #: the Mesa model ("mesa"), or only the vectorised engine (an error where it does not apply)
    engine: Literal["auto", "mesa", "vector"] = "auto"


class TaskFailed(RuntimeError):
    """A task that could not be completed; what finished before it has been handed over."""


#: the execution settings of the experiments running in this context
_SETTINGS: ContextVar[ExecutionSettings | None] = ContextVar(
    "mesa_dilemmas_execution", default=None
)


def current() -> ExecutionSettings:
    """The settings of the experiments running in this context (the defaults outside ``use``)."""
    return _SETTINGS.get() or ExecutionSettings()


@contextlib.contextmanager
def use(
    settings: ExecutionSettings, processes: int = 1, llm_budget: Any = None
) -> Iterator[ExecutionSettings]:
    """Run the experiments inside on ``settings`` (a local Ray instance lives as long as this).

    ``llm_budget`` (the run's ``[llm.budget]``, for a run with LLM agents): on Ray, one gate
    actor then holds the LLM limits and the budget for every worker of the run."""
    token = _SETTINGS.set(settings)
    started = False
    try:
        with contextlib.ExitStack() as stack:
            if settings.backend == "ray":
                started = _ray_init(settings, processes)
                if llm_budget is not None:
                    import ray

                    from mesa_dilemmas.llm.accounting.cluster import start_gate, use_gate

                    name = f"llm-gate-{os.getpid()}-{time.time_ns()}"
                    gate = start_gate(name, llm_budget)
                    ray.get(gate.spent.remote())  # the gate is up before the first task asks it
                    stack.enter_context(use_gate(name))
            yield settings
    finally:
        _SETTINGS.reset(token)
        if started:
            import ray

            ray.shutdown()


def check_available(settings: ExecutionSettings) -> None:
    """Raise ``ValueError("execution.backend: ...")`` when the backend cannot be used here."""
    if settings.backend == "ray":
        try:
            import ray  # noqa: F401
        except ImportError:
            raise ValueError(
                "execution.backend: 'ray' needs Ray, which is not installed "
                "(pip install 'mesa-dilemmas[ray]')"
            ) from None
        if settings.address and settings.address != "auto":
            problem = _address_problem(settings.address)
            if problem:
                raise ValueError(f"execution.address: {settings.address!r}: {problem}")


def _address_problem(address: str) -> str | None:
    """Why nothing can be reached at a Ray address ``host:port`` or ``ray://host:port`` (None:
    something answers there), found with one TCP connection before the run starts."""
    import socket

    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        return "give host:port, ray://host:port or auto"
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=5):
            return None
    except OSError as exc:
        return f"nothing answers there ({exc.strerror or exc})"


def _ray_init(settings: ExecutionSettings, processes: int) -> bool:
    """Connect to (or start) Ray; True when this run started it and must shut it down."""
    import ray

    if ray.is_initialized():
        return False
    env = _task_env()
    if settings.address:
        ray.init(address=settings.address, log_to_driver=False, runtime_env={"env_vars": env})
        return True
    workers = settings.workers or processes
    ray.init(
        num_cpus=workers,
        include_dashboard=False,
        log_to_driver=False,
        configure_logging=False,
        runtime_env={"env_vars": env},
    )
    return True


def _task_env() -> dict[str, str]:
    """What a worker must share with the driver: the user's own settings (the cache directory;
    the LLM session and gate go with each task instead) and the import roots."""
    env = {k: v for k, v in os.environ.items() if k.startswith("MESA_DILEMMAS_")}
    env["PYTHONPATH"] = os.pathsep.join(_python_path())
    return env


def _python_path() -> list[str]:
    """The driver's import roots, so local Ray workers import the same code."""
    import mesa_dilemmas

    root = os.path.dirname(os.path.dirname(os.path.abspath(mesa_dilemmas.__file__)))
    extra = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    return [root, *extra]


def map_tasks(
    fn: Callable[[Any], Any],
    tasks: Sequence[Any],
    *,
    processes: int,
    progress: bool,
    desc: str,
    costs: Sequence[float] | None = None,
    on_result: OnResult | None = None,
    label: Callable[[int], str] | None = None,
    keep: bool = True,
    unit: str = "task",
    sizes: Sequence[int] | None = None,
) -> list[Any]:
    r"""``[fn(t) for t in tasks]`` on the current backend; results in task order.

    ``fn`` must be a module-level function and tasks plain picklable data.  Tasks go out
    costliest first (``costs``); ``on_result(i, result)`` is called on the driver as each one
    finishes (to save it).  The order of results never depends on scheduling.  ``keep=False``
    lets go of each result once ``on_result`` has it (the list returned is all None), so the
    driver never holds more than the results that have arrived and not been handed over.
    The progress bar counts tasks, or ``sizes[i]`` ``unit``\ s per task (e.g. runs per chunk)."""
    from tqdm.auto import tqdm

    llm_run = active_llm_run()
    gate = active_gate()
    settings = current()
    order = (
        sorted(range(len(tasks)), key=lambda i: -costs[i])
        if costs is not None
        else range(len(tasks))
    )
    total = len(tasks) if sizes is None else sum(sizes)
    # leave=True: the bar's last state ("12/12 [00:01, 9 run/s]") stays on screen; with
    # leave=False a run that finished within tqdm's refresh interval showed only "0/12"
    bar = tqdm(total=total, desc=desc, unit=unit, disable=not progress, leave=True)
    results: list[Any] = [None] * len(tasks)

    def done(i: int, result: Any) -> None:
        if keep:
            results[i] = result
        if on_result is not None:
            on_result(i, result)
        bar.update(1 if sizes is None else sizes[i])

    try:
        if settings.backend == "ray":
            _ray_map(
                fn,
                tasks,
                list(order),
                done,
                label or (lambda i: f"{desc} task {i}"),
                settings.max_retries,
                llm_run,
                gate,
            )
        elif processes <= 1 or len(tasks) <= 1:
            for i in order:
                done(i, fn(tasks[i]))
        else:
            ctx = multiprocessing.get_context("spawn")
            with ProcessPoolExecutor(
                max_workers=min(processes, len(tasks)), mp_context=ctx
            ) as pool:
                futures = {pool.submit(_call, fn, tasks[i], llm_run): i for i in order}
                try:
                    for fut in as_completed(futures):
                        done(futures.pop(fut), fut.result())  # a done future lets go of it
                except BaseException:
                    pool.shutdown(wait=False, cancel_futures=True)  # fail fast
                    raise
        return results
    finally:
        bar.close()


def active_llm_run() -> str | None:
    """The session file of the LLM run active here (None: none, or the LLM layer not loaded)."""
    import sys

    session = sys.modules.get("mesa_dilemmas.llm.session")
    return None if session is None else session.active_path()


def active_gate() -> str | None:
    """The LLM gate of the Ray run active here (None: none, or the LLM layer not loaded)."""
    import sys

    cluster = sys.modules.get("mesa_dilemmas.llm.accounting.cluster")
    return None if cluster is None else cluster.gate_name()


def _call(
    fn: Callable[[Any], Any], task: Any, llm_run: str | None = None, gate: str | None = None
) -> Any:
    """``fn(task)`` in a worker, inside the driver's LLM run (``llm_run``) and, on Ray, its LLM
    gate (``gate``), both sent with the task."""
    if llm_run is None and gate is None:
        return fn(task)
    from mesa_dilemmas.llm import session
    from mesa_dilemmas.llm.accounting.cluster import use_gate

    with session.use(llm_run), use_gate(gate):
        return fn(task)


def _ray_map(
    fn: Callable[[Any], Any],
    tasks: Sequence[Any],
    order: list[int],
    done: Callable[[int, Any], None],
    label: Callable[[int], str],
    max_retries: int,
    llm_run: str | None = None,
    gate: str | None = None,
) -> None:
    import ray
    from ray.exceptions import RayError, RayTaskError

    remote = ray.remote(num_cpus=1, max_retries=max_retries, retry_exceptions=False)(_call)
    # per task too, so a Ray that was started before this run (by the caller) gets them as well
    # (the run's variables only: the import path stays the one the Ray job was started with)
    run_vars = {k: v for k, v in _task_env().items() if k != "PYTHONPATH"}
    remote = remote.options(runtime_env={"env_vars": run_vars})
    fn_ref = ray.put(fn)
    refs = {remote.remote(fn_ref, tasks[i], llm_run, gate): i for i in order}
    pending = list(refs)
    try:
        while pending:
            ready, pending = ray.wait(pending, num_returns=1)
            for ref in ready:
                i = refs.pop(ref)  # the object is freed once the driver lets go of its ref
                try:
                    result = ray.get(ref)
                except RayTaskError as exc:
                    if isinstance(exc.cause, Exception):  # the task raised: as in a local pool
                        raise exc.cause from None
                    raise
                except RayError as exc:  # the worker died (retried max_retries times) or similar
                    cause = getattr(exc, "cause", None) or exc
                    raise TaskFailed(
                        f"{label(i)} failed after up to {max_retries} retries: "
                        f"{type(cause).__name__}: {str(cause).strip().splitlines()[-1] if str(cause).strip() else ''}"
                    ) from None
                done(i, result)
    except BaseException:
        for ref in pending:
            ray.cancel(ref, force=True)
        raise
