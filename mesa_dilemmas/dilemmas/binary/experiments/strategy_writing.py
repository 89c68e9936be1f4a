"""LLMs write strategy sets (paper 002, Sec. 4.1): a description, then code, checked in the sandbox.

For strategy ``i`` of a set (one model, one attitude, one game):

1. **Description.** The game's rules (parameters as symbols), what a strategy
   can observe and that nobody can communicate, plus the task (a strategy of
   the given attitude that depends only on the parameters and the history,
   adaptive and robust) -> a natural-language strategy.
2. **Code.** The description plus the strategy interface (``Strategy``, the
   history object, ``self.rng``, the allowed imports) -> a Python class.
3. **Checks, inside the sandbox.** The module is imported in a sandbox worker
   (syntax, imports, a ``Strategy`` subclass with ``act``), then played by
   :func:`~mesa_dilemmas.dilemmas.binary.checks.check_strategy` (no error,
   C/D answers, fast enough) -- also in the sandbox, so hostile or broken code
   costs a flag, never the run.  A failing implementation is regenerated from
   the *same* description (the rejection's reasons are shown to the model), up
   to ``max_tries`` implementations; every failure is recorded.  Logic that is
   legal but does not match the description or the attitude is kept, as the
   paper keeps it.  Passing strategies are also tested for determinism
   (:func:`~mesa_dilemmas.dilemmas.binary.checks.is_deterministic`), which
   lets experiments memoise them.
4. **Output.** A strategy set directory in the layout of
   :mod:`mesa_dilemmas.dilemmas.binary.strategies.loader`: ``sNNNN.py`` per accepted
   strategy, ``strategy_set.toml`` with each one's description, tries and
   failures, the rejected ones under ``[[rejected]]`` and every attempt's code
   in ``attempts/``.  Any experiment and ``analyse strategies`` load it by path.

Every call goes through the LLM layer's client (cache, run record, replay,
budgets): the sample id of a call is (run seed, strategy index, kind, attempt),
so a re-run or ``--resume`` answers from the record and a ``replay:<spec>``
run makes no provider call.  Descriptions are requested concurrently (the
provider's concurrency limit applies), then each round of implementations;
checks run one at a time in this process's sandbox worker.

Command line: ``mesa-dilemmas strategies generate ...``; scenario form:
``experiment = "strategy_writing:StrategyWritingExperiment"`` with lists of
models, attitudes and games.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import time
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, field_validator

from mesa_dilemmas.dilemmas.binary import prompts as binary_prompts
from mesa_dilemmas.dilemmas.binary.rules import binary_games
from mesa_dilemmas.scenarios import execution
from mesa_dilemmas.scenarios.experiment import Results, RunContext

if TYPE_CHECKING:
    from mesa_dilemmas.dilemmas.binary.strategies.loader import StrategyEntry
    from mesa_dilemmas.llm.settings import LLMSettings
    from mesa_dilemmas.scenarios.config import Scenario

#: implementations an LLM may write per strategy description before the description is dropped
DEFAULT_TRIES = 3
#: reasons shown to the model when it is asked again (the rest are recorded only)
SHOWN_PROBLEMS = 5
_FENCE = re.compile(r"```[ \t]*(?:python|py|python3)?[ \t]*\n(.*?)(?:```|\Z)", re.DOTALL)


# -- one set -------------------------------------------------------------------------------------


@dataclass
class Written:
    """The record of one strategy: its description and every implementation tried."""

    index: int
    description: str = ""
    tries: int = 0
    failures: list[str] = field(default_factory=list)
    accepted: str | None = None  # module file name of the accepted implementation
    class_name: str | None = None
    deterministic: bool | None = None
    anonymous: bool | None = None
    last_problems: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return f"s{self.index:04d}"


@dataclass(frozen=True)
class WritingJob:
    """One set to write: ``n`` strategies of one attitude for one game by one model."""

    game: str
    attitude: str
    model: str
    n: int
    out: str
    max_tries: int = DEFAULT_TRIES
    seed: int = 0
    name: str | None = None
    description_tokens: int = 700
    code_tokens: int = 1200

    def set_name(self, label: str) -> str:
        model = label.split(":", 1)[-1].removesuffix(".gguf")
        slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", model).strip("-")
        return self.name or f"{slug}_{self.attitude}_{self.game}"


def extract_code(text: str) -> str:
    """The Python code in a model's answer: the first fenced block holding a class, else the text."""
    blocks = [b for b in _FENCE.findall(text or "") if "class " in b]
    if blocks:
        return blocks[0].strip() + "\n"
    return (text or "").strip() + "\n"


def check_candidate(path: Path, game: str) -> tuple[list[str], StrategyEntry | None]:
    """Problems of the module at ``path`` (empty if it passes) and its strategy; all in the sandbox."""
    from mesa_dilemmas.dilemmas.binary.checks import check_strategy
    from mesa_dilemmas.dilemmas.binary.strategies.loader import describe_set

    try:
        found = describe_set(path)
    except ValueError as exc:
        return [f"loading: {str(exc).replace(str(path), path.name)}"[:500]], None
    problems = [p[:500] for p in found.problems]
    if not found.entries:
        problems.append(
            "interface: no class derived from Strategy with an act(self, history) method"
        )
        return problems, None
    entry = found.entries[-1]  # the last class defined (helpers and bases come first)
    if entry.interface != "native":
        problems.append("interface: the class does not derive from Strategy")
        return problems, None
    problems += check_strategy(entry, games=[game])
    return problems, entry


class _Caller:
    """The LLM layer's client for one model, with this job's sample ids."""

    def __init__(self, spec: str, settings: LLMSettings, seed: int) -> None:
        from mesa_dilemmas.llm.checks import check_spec, resolve
        from mesa_dilemmas.llm.client import get_client

        resolved = resolve(spec, settings)
        check_spec(resolved, settings)
        self.client = get_client(resolved, settings)
        self.label = resolved.label
        self.settings = settings
        self.seed = seed

    async def ask(
        self, messages: list[tuple[str, str]], kind: str, index: int, attempt: int, tokens: int
    ) -> str:
        from mesa_dilemmas.llm.request import CallContext, ChatRequest, Message, seed_for

        ctx = CallContext(
            kind=kind,
            agent_id=index,
            attempt=attempt,
            run_seed=str(self.seed),
            policy="strategy_writing",
        )
        request = ChatRequest(
            messages=tuple(Message(role, text) for role, text in messages),
            temperature=self.settings.temperature,
            max_tokens=tokens,
            seed=seed_for(ctx.sample_id),
            top_p=self.settings.top_p,
        )
        outcome = await self.client.complete(request, ctx)
        return outcome.response.text or ""


async def _write(job: WritingJob, caller: _Caller, out: Path, progress: bool) -> list[Written]:
    records = [Written(i) for i in range(job.n)]
    prompt = binary_prompts.description_messages(job.game, job.attitude)

    async def describe(rec: Written) -> None:
        rec.description = (
            await caller.ask(prompt, "strategy.description", rec.index, 0, job.description_tokens)
        ).strip()

    await asyncio.gather(*(describe(r) for r in records))
    attempts = out / "attempts"
    attempts.mkdir(parents=True, exist_ok=True)
    pending = list(records)
    for attempt in range(job.max_tries):
        if not pending:
            break

        async def implement(rec: Written, attempt: int = attempt) -> str:
            shown = rec.last_problems[:SHOWN_PROBLEMS]
            messages = binary_prompts.code_messages(job.game, job.attitude, rec.description, shown)
            return await caller.ask(messages, "strategy.code", rec.index, attempt, job.code_tokens)

        answers = await asyncio.gather(*(implement(r) for r in pending))
        still = []
        for rec, answer in zip(pending, answers, strict=True):
            rec.tries += 1
            file = attempts / f"{rec.name}_try{attempt + 1}.py"
            file.write_text(extract_code(answer))
            problems, entry = check_candidate(file, job.game)
            if problems:
                rec.last_problems = problems
                rec.failures.append(f"try {attempt + 1}: " + "; ".join(problems)[:2000])
                still.append(rec)
                continue
            rec.accepted = f"{rec.name}.py"
            (out / rec.accepted).write_text(file.read_text())
            assert entry is not None
            from mesa_dilemmas.dilemmas.binary.checks import is_anonymous, is_deterministic

            rec.class_name = entry.class_name
            rec.deterministic = is_deterministic(entry, games=[job.game])
            if rec.deterministic:
                rec.anonymous = is_anonymous(entry, games=[job.game])
            if progress:
                print(
                    f"  {rec.name}: accepted after {rec.tries} tr{'y' if rec.tries == 1 else 'ies'}"
                )
        pending = still
        if progress:
            print(
                f"{job.set_name(caller.label)}: implementation round {attempt + 1}: "
                f"{sum(r.accepted is not None for r in records)}/{job.n} accepted"
            )
    return records


def _toml_str(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)  # a JSON string is a valid TOML basic string


def write_manifest(job: WritingJob, label: str, records: Sequence[Written], out: Path) -> Path:
    """``strategy_set.toml``: the set's metadata, each accepted strategy, each rejected one."""
    name = job.set_name(label)
    accepted = [r for r in records if r.accepted and r.class_name]
    lines = [
        "# written by `mesa-dilemmas strategies generate` (mesa_dilemmas.dilemmas.binary.experiments.strategy_writing)",
        f"name = {_toml_str(name)}",
        f"source = {_toml_str(label)}",
        f"attitude = {_toml_str(job.attitude)}",
        f"games = [{_toml_str(job.game)}]",
        f"description = {_toml_str(f'{job.attitude} strategies for {job.game} written by {label}')}",
        f"modules = [{', '.join(_toml_str(r.accepted or '') for r in accepted)}]",
        "",
        "[generation]",
        f"model = {_toml_str(label)}",
        f"game = {_toml_str(job.game)}",
        f"attitude = {_toml_str(job.attitude)}",
        f"requested = {job.n}",
        f"accepted = {len(accepted)}",
        f"rejected = {len(records) - len(accepted)}",
        f"max_tries = {job.max_tries}",
        f"seed = {job.seed}",
    ]
    for r in accepted:
        lines += [
            "",
            "[[strategies]]",
            f"name = {_toml_str(r.name)}",
            f"class = {_toml_str(r.class_name or '')}",
            f"module = {_toml_str(r.accepted or '')}",
            f"description = {_toml_str(r.description)}",
            f"tries = {r.tries}",
            f"failures = [{', '.join(_toml_str(f) for f in r.failures)}]",
        ]
        if r.deterministic is not None:
            lines.append(f"deterministic = {'true' if r.deterministic else 'false'}")
        if r.anonymous is not None:
            lines.append(f"anonymous = {'true' if r.anonymous else 'false'}")
    for r in records:
        if r in accepted:
            continue
        lines += [
            "",
            "[[rejected]]",
            f"name = {_toml_str(r.name)}",
            f"description = {_toml_str(r.description)}",
            f"tries = {r.tries}",
            f"failures = [{', '.join(_toml_str(f) for f in r.failures)}]",
        ]
    path = out / "strategy_set.toml"
    text = "\n".join(lines) + "\n"
    tomllib.loads(text)  # what we write must read back
    path.write_text(text)
    return path


def mark_determinism(set_dir: Path, game: str) -> dict[str, bool]:
    """Check every strategy of the set directory ``set_dir`` for determinism (in the sandbox) and
    record the answers in its manifest (a ``[[strategies]]`` item each), so experiments memoise
    the deterministic ones.  For sets whose manifest lists no strategies; returns name -> answer."""
    from mesa_dilemmas.dilemmas.binary.checks import is_anonymous, is_deterministic
    from mesa_dilemmas.dilemmas.binary.strategies.loader import MANIFEST, load_strategy_set

    manifest = Path(set_dir) / MANIFEST
    text = manifest.read_text()
    if "strategies" in tomllib.loads(text):
        raise ValueError(f"{manifest}: already lists its strategies")
    found = {}
    lines = [text.rstrip("\n")]
    for entry in load_strategy_set(set_dir):
        found[entry.name] = is_deterministic(entry, games=[game])
        lines += [
            "",
            "[[strategies]]",
            f"class = {_toml_str(entry.class_name or entry.name)}",
            f"module = {_toml_str(Path(entry.module or '').name)}",
            f"deterministic = {'true' if found[entry.name] else 'false'}",
        ]
        if found[entry.name]:
            anonymous = is_anonymous(entry, games=[game])
            lines.append(f"anonymous = {'true' if anonymous else 'false'}")
    manifest.write_text("\n".join(lines) + "\n")
    from mesa_dilemmas.dilemmas.binary.strategies.loader import _load_cached

    _load_cached.cache_clear()  # this process read the set before its manifest changed
    return found


def write_set(
    job: WritingJob, settings: LLMSettings | None = None, progress: bool = False
) -> dict[str, Any]:
    """Write one set into ``job.out`` (created); returns its summary row.

    Call inside a run session (:func:`mesa_dilemmas.llm.session.start_run`) to
    record the calls; outside one they still go through the cache and budget.
    """
    from mesa_dilemmas.llm import session
    from mesa_dilemmas.llm.settings import LLMSettings as _Settings

    settings = settings or session.current_settings() or _Settings()
    caller = _Caller(job.model, settings, job.seed)
    out = Path(job.out)
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    records = asyncio.run(_write(job, caller, out, progress))
    write_manifest(job, caller.label, records, out)
    accepted = [r for r in records if r.accepted]
    return {
        "set": job.set_name(caller.label),
        "path": str(out),
        "model": caller.label,
        "attitude": job.attitude,
        "game": job.game,
        "requested": job.n,
        "accepted": len(accepted),
        "rejected": job.n - len(accepted),
        "first_try_pass_rate": sum(r.tries == 1 for r in accepted) / job.n if job.n else 0.0,
        "mean_tries": sum(r.tries for r in records) / job.n if job.n else 0.0,
        "deterministic": sum(bool(r.deterministic) for r in accepted),
        "wall_time_s": round(time.perf_counter() - started, 3),
    }


def _write_set_task(job: WritingJob) -> dict[str, Any]:
    return write_set(job)


# -- scenario form -------------------------------------------------------------------------------


class WritingOptions(BaseModel):
    """The ``[options]`` of a strategy-writing scenario: every model x attitude x game."""

    model_config = ConfigDict(extra="forbid")

    models: list[str] = ["local"]
    attitudes: list[Annotated[str, Field(min_length=1, max_length=60)]] = [
        "collective",
        "exploitative",
    ]
    #: C/D games (default: the first registered one)
    games: list[str] = Field(default_factory=lambda: list(binary_games()[:1]))
    #: strategies per set (the paper: 512)
    n: Annotated[int, Field(ge=1, le=100_000)] = 8
    #: implementations tried per description
    max_tries: Annotated[int, Field(ge=1, le=20)] = DEFAULT_TRIES
    description_tokens: Annotated[int, Field(ge=16, le=32768)] = 700
    code_tokens: Annotated[int, Field(ge=16, le=32768)] = 1200

    @field_validator("games")
    @classmethod
    def _games(cls, v: list[str]) -> list[str]:
        for g in v:
            if g not in binary_games():
                raise ValueError(f"unknown game {g!r}; allowed: {', '.join(binary_games())}")
        return v

    @field_validator("models", "attitudes", "games")
    @classmethod
    def _nonempty(cls, v: list[str]) -> list[str]:
        if not v:
            raise ValueError("give at least one")
        return v


class StrategyWritingExperiment:
    """Write one strategy set per (model, attitude, game) into ``<run dir>/sets/``."""

    USES_MODEL_PARAMS: ClassVar[bool] = False
    Options: ClassVar[type[BaseModel]] = WritingOptions

    def run(self, scenario: Scenario, options: BaseModel, ctx: RunContext) -> Results:
        from mesa_dilemmas import llm
        from mesa_dilemmas.llm import session
        from mesa_dilemmas.scenarios.config import ConfigError

        opts = WritingOptions.model_validate(
            options.model_dump() if isinstance(options, BaseModel) else options
        )
        own_session = session.current() is None
        settings = session.current_settings() or llm.LLMSettings.from_table(scenario.llm)
        try:
            llm.preflight(opts.models, settings)
        except llm.LLMConfigError as exc:
            raise ConfigError(str(exc)) from None
        jobs = []
        for model in opts.models:
            for attitude in opts.attitudes:
                for game in opts.games:
                    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", model.split("@")[0]).strip("-")
                    jobs.append(
                        WritingJob(
                            game=game,
                            attitude=attitude,
                            model=model,
                            n=opts.n,
                            out=str(ctx.out_dir / "sets" / f"{slug}_{attitude}_{game}"),
                            max_tries=opts.max_tries,
                            seed=scenario.seed,
                            description_tokens=opts.description_tokens,
                            code_tokens=opts.code_tokens,
                        )
                    )
        if own_session:
            session.start_run(settings, ctx.out_dir, resume=ctx.resume)
        summary: dict[str, Any] = {}
        try:
            rows = execution.map_tasks(
                _write_set_task,
                jobs,
                processes=ctx.processes,
                progress=ctx.progress,
                desc="strategy sets",
                costs=[j.n for j in jobs],
            )
        finally:
            if own_session:
                summary["llm"] = session.finish_run()
        runs = pd.DataFrame(rows)
        summary.update({"experiment": "strategy_writing", "sets": rows})
        return Results(
            runs=runs,
            summary=summary,
            metrics=["accepted", "first_try_pass_rate", "mean_tries", "deterministic"],
            group_by=["model", "attitude", "game"],
            seeds=[scenario.seed],
        )


# -- command line --------------------------------------------------------------------------------


def _fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 2


def cmd_generate(args: argparse.Namespace) -> int:
    from mesa_dilemmas import llm
    from mesa_dilemmas.llm import session

    if args.game not in binary_games():
        return _fail(f"--game: unknown game {args.game!r}; allowed: {', '.join(binary_games())}")
    if not args.attitude.strip() or len(args.attitude) > 60:
        return _fail("--attitude: give a word or short phrase")
    if args.n < 1:
        return _fail(f"-n: must be at least 1 (got {args.n})")
    if args.max_tries is None:
        args.max_tries = DEFAULT_TRIES
    if not 1 <= args.max_tries <= 20:
        return _fail(f"--max-tries: must be between 1 and 20 (got {args.max_tries})")
    for flag, value in (
        ("--description-tokens", args.description_tokens),
        ("--code-tokens", args.code_tokens),
    ):
        if value < 16:
            return _fail(f"{flag}: must be at least 16 (got {value})")
    from mesa_dilemmas.files import out_dir_unusable

    out = Path(args.out)
    if problem := out_dir_unusable(args.out):
        return _fail(f"--out {args.out!r}: {problem}")
    if not args.resume and out.exists() and any(out.iterdir()):
        return _fail(
            f"--out {out}: directory exists and is not empty (use --resume to continue it)"
        )
    table: dict[str, Any] = {}
    if args.llm:
        try:
            table = tomllib.loads(Path(args.llm).read_text()).get("llm", {})
        except (OSError, tomllib.TOMLDecodeError) as exc:
            return _fail(f"--llm {args.llm}: {exc}")
    budget = dict(table.get("budget", {}))
    if args.max_calls is not None:
        budget["max_calls"] = args.max_calls
    if args.max_cost is not None:
        budget["max_cost_usd"] = args.max_cost
    if budget:
        table["budget"] = budget
    if getattr(args, "batch", False):
        table["batch"] = True
    try:
        settings = llm.LLMSettings.from_table(table)
        llm.preflight([args.model], settings)
    except (llm.LLMConfigError, ValueError) as exc:
        return _fail(f"--model/--llm: {str(exc).splitlines()[0]}")
    job = WritingJob(
        game=args.game,
        attitude=args.attitude.strip(),
        model=args.model,
        n=args.n,
        out=str(out),
        max_tries=args.max_tries,
        seed=args.seed,
        name=args.name,
        description_tokens=args.description_tokens,
        code_tokens=args.code_tokens,
    )
    session.start_run(settings, out, resume=args.resume)
    try:
        row = write_set(job, settings, progress=not args.quiet)
    except llm.BudgetExceeded as exc:
        session.finish_run()
        print(
            f"stopped: {exc}; the calls made so far are recorded in {out}: "
            f"continue with --resume after raising the budget",
            file=sys.stderr,
        )
        return 3
    except llm.ProviderRejected as exc:  # a provider down after its retries, a rejected key
        session.finish_run()
        hint = f": continue with --resume --out {out}" if exc.resumable else ""
        print(f"stopped: {exc}; the calls made so far are recorded in {out}{hint}", file=sys.stderr)
        return 3
    except llm.ReplayMiss as exc:
        session.finish_run()
        return _fail(str(exc))
    accounting = session.finish_run()
    row["llm"] = {
        k: accounting.get(k)
        for k in (
            "calls",
            "provider_calls",
            "cache_hits",
            "tokens_in",
            "tokens_out",
            "cost_usd",
        )
    }
    (out / "generation.json").write_text(json.dumps(row, indent=2))
    print(
        f"{row['set']}: {row['accepted']}/{row['requested']} strategies accepted "
        f"({row['rejected']} rejected, {row['mean_tries']:.2f} tries each) -> {out}"
    )
    print(f"llm: {row['llm']['provider_calls']} provider calls, {row['llm']['calls']} calls")
    return 0
