"""Providers as records: every fact about a provider lives in its :class:`Provider`, and a
package of someone else's adds one by entry point with no edit of ours.

The third-party provider here is a real installed distribution, written to a temporary folder
(a module, its ``*.dist-info`` with ``entry_points.txt``): a child ``mesa-dilemmas run`` finds it
through ``importlib.metadata`` as it would a pip-installed one, and LLM villagers of the fishery
play on it through the whole stack (key check, SDK check, cache, recorder, prices).
"""

from __future__ import annotations

import ast
import json
import os
from pathlib import Path

import pandas as pd
import pytest

from mesa_dilemmas.llm import providers
from mesa_dilemmas.llm.backends.base import Backend
from mesa_dilemmas.llm.errors import LLMConfigError
from mesa_dilemmas.llm.settings import LLMSettings
from mesa_dilemmas.llm.specs import parse_spec, schema_in_text, shares_schema
from tests.cli_runner import REPO, cli

LLM_DIR = REPO / "mesa_dilemmas" / "llm"

#: a provider package as its author would write it: a backend that answers every native-mode
#: request with the smallest instance of the schema it is sent, and its record
PACKAGE = """
from mesa_dilemmas.llm.backends.base import Backend
from mesa_dilemmas.llm.providers import Provider
from mesa_dilemmas.llm.request import ChatResponse


def smallest(schema, defs):
    if "$ref" in schema:
        return smallest(defs[schema["$ref"].rsplit("/", 1)[-1]], defs)
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            return smallest(schema[key][0], defs)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type")
    if kind == "object":
        props = schema.get("properties", {})
        return {k: smallest(props[k], defs) for k in schema.get("required", props)}
    if kind == "array":
        return [smallest(schema.get("items", {}), defs)] * schema.get("minItems", 0)
    if kind in ("integer", "number"):
        return schema.get("minimum", 0)
    if kind == "boolean":
        return False
    return "ok"


class EchoBackend(Backend):
    provider = "echo"

    async def acomplete(self, request):
        schema = request.schema or {}
        data = smallest(schema, schema.get("$defs", {}))
        return ChatResponse(text="", tokens_in=100, tokens_out=10, data=data, model=self.spec.model)


ECHO = Provider(
    "echo",
    "echo_llm:EchoBackend",
    default_model="echo-1",
    key_envs=("ECHO_API_KEY",),
    sdk=("json", "json"),
    prices={"echo-": {"input": 1.0, "output": 2.0}},
)
"""


def install_echo(root: Path) -> Path:
    """``echo_llm`` as an installed distribution under ``root`` (add ``root`` to the path)."""
    (root / "echo_llm").mkdir(parents=True)
    (root / "echo_llm" / "__init__.py").write_text(PACKAGE)
    info = root / "echo_llm-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: echo-llm\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[mesa_dilemmas.providers]\necho = echo_llm:ECHO\n")
    return root


@pytest.fixture
def echo_installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    root = install_echo(tmp_path / "site")
    monkeypatch.syspath_prepend(str(root))
    providers.providers.cache_clear()
    yield root
    providers.providers.cache_clear()


def test_each_built_in_record_names_its_backend() -> None:
    for name, record in providers.BUILT_IN.items():
        cls = record.backend_class()
        assert issubclass(cls, Backend) and cls.provider == name
        assert record.batch == hasattr(cls, "submit_batch"), name
        assert record.paid == bool(record.key_envs), name


def test_no_file_of_the_llm_layer_lists_providers_outside_the_records() -> None:
    """The shape, not the names: no tuple, list, set or dict in ``llm/`` (the records and the
    backends aside) holds two provider names -- a list of providers anywhere else would be a
    second place to edit when one is added."""
    built_in = set(providers.BUILT_IN) - {"replay"}
    offenders = []
    for path in sorted(LLM_DIR.rglob("*.py")):
        if path.name == "providers.py" or path.parent.name == "backends":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Tuple | ast.List | ast.Set | ast.Dict):
                items = node.keys if isinstance(node, ast.Dict) else node.elts
                named = {i.value for i in items if isinstance(i, ast.Constant)} & built_in
                if len(named) >= 2:
                    offenders.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert offenders == []


def test_a_registered_provider_is_known_everywhere(echo_installed: Path) -> None:
    spec = parse_spec("echo")
    assert (spec.provider, spec.model) == ("echo", "echo-1")
    assert not shares_schema(spec) and schema_in_text(spec)
    settings = LLMSettings.from_table({"providers": {"echo": {"max_concurrency": 2}}})
    assert settings.provider("echo").max_concurrency == 2
    from mesa_dilemmas.llm.accounting import PriceTable
    from mesa_dilemmas.viz.dashboard.llm_run import provider_names

    assert PriceTable().cost("echo:echo-1", 1_000_000, 0) == pytest.approx(1.0)
    assert "echo" in provider_names()
    with pytest.raises(LLMConfigError, match=r"^llm\.providers\.nope: unknown provider"):
        LLMSettings.from_table({"providers": {"nope": {}}})


def test_a_bad_record_is_refused_naming_its_entry_point(tmp_path, monkeypatch) -> None:
    root = install_echo(tmp_path / "site")
    (root / "echo_llm-0.1.dist-info" / "entry_points.txt").write_text(
        "[mesa_dilemmas.providers]\nopenai = echo_llm:ECHO\n"
    )
    monkeypatch.syspath_prepend(str(root))
    providers.providers.cache_clear()
    try:
        with pytest.raises(ValueError, match="entry point 'openai': its Provider is named 'echo'"):
            providers.providers()
    finally:
        providers.providers.cache_clear()


SCENARIO = """
game = "fishery"
seed = 7
replications = 1
max_steps = 2

[params]
n_agents = 4
llm_agents = 2
llm = "echo:echo-1"

[llm]
answer_mode = "native"
reasoning = false
"""


def test_a_third_party_provider_plays_a_game_from_the_command_line(tmp_path: Path) -> None:
    root = install_echo(tmp_path / "site")
    scenario = tmp_path / "echo.toml"
    scenario.write_text(SCENARIO)
    env = {
        "PYTHONPATH": os.pathsep.join([str(root), str(REPO)]),
        "ECHO_API_KEY": "test-key",
    }
    out = tmp_path / "run"
    done = cli("run", str(scenario), "--out", str(out), cache=tmp_path / "cache", env=env)
    assert done.returncode == 0, done.stderr
    llm = json.loads((out / "summary.json").read_text())["llm"]
    assert list(llm["by_model"]) == ["echo:echo-1"]
    assert llm["provider_calls"] == llm["decisions"] > 0 and llm["fallbacks"] == 0
    # priced from the record's own table: 100 tokens in at $1/M, 10 out at $2/M per call
    assert llm["cost_usd"] == pytest.approx(llm["provider_calls"] * 120e-6)
    steps = pd.read_parquet(out / "steps.parquet")
    assert steps["llm_decisions_per_villager"].dropna().gt(0).all()

    # without its key the run stops before it starts, naming the record's variable
    env.pop("ECHO_API_KEY")
    refused = cli("run", str(scenario), "--out", str(tmp_path / "r2"), env=env)
    assert refused.returncode != 0 and "ECHO_API_KEY" in refused.stderr
