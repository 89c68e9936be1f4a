"""The documentation site builds strictly (any Sphinx warning fails it), with the API reference
generated from the docstrings and the tutorial notebooks executed top to bottom during the build
(MyST-NB: an error in any cell fails it) -- on rule players and the bundled local model.

The notebooks are kept in the repository without outputs (the build makes them)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
TUTORIALS = sorted((REPO / "docs" / "tutorials").glob("*.ipynb"))


def test_every_tutorial_is_stored_without_outputs_and_listed() -> None:
    assert {p.stem for p in TUTORIALS} >= {
        "first_game",
        "fishery",
        "port_of_mars",
        "public_goods",
        "llm_agents",
    }
    listed = (REPO / "docs" / "tutorials" / "index.md").read_text()
    for path in TUTORIALS:
        book = json.loads(path.read_text())
        code = [c for c in book["cells"] if c["cell_type"] == "code"]
        assert code and all(not c["outputs"] and c["execution_count"] is None for c in code), path
        assert f"\n{path.stem}\n" in listed, f"{path.name} is not in tutorials/index.md"


@pytest.mark.skipif(
    shutil.which("sphinx-build", path=str(Path(sys.executable).parent)) is None
    and not os.environ.get("CI"),
    reason="the docs extra is not installed (scripts/docs.sh installs it)",
)
def test_the_site_builds_strictly_with_executed_tutorials_and_the_api(tmp_path: Path) -> None:
    source = tmp_path / "docs"
    shutil.copytree(REPO / "docs", source, ignore=shutil.ignore_patterns("_build", "generated"))
    out = tmp_path / "html"
    env = {k: v for k, v in os.environ.items() if k != "MPLBACKEND"}  # the kernel draws inline
    env["DOCS_NB_EXECUTION"] = "force"
    env["MESA_DILEMMAS_CACHE_DIR"] = str(tmp_path / "cache")  # the LLM tutorial's own cache
    result = subprocess.run(
        [sys.executable, "-m", "sphinx", "-b", "html", "-W", "--keep-going", "-q", source, out],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=1200,
    )
    assert result.returncode == 0, result.stderr[-6000:]
    # every page, the API reference from the docstrings, the executed tutorials
    for page in ("index", "architecture", "reproduction", "pettingzoo", "api/index"):
        assert (out / f"{page}.html").is_file(), page
    api = out / "api" / "generated"
    assert (api / "mesa_dilemmas.dilemmas.base.html").is_file()
    assert "DilemmaParameters" in (api / "mesa_dilemmas.dilemmas.base.html").read_text()
    public_goods = (out / "tutorials" / "public_goods.html").read_text()
    assert "cooperation_rate" in public_goods and "<img" in public_goods  # a table and a plot
    llm = (out / "tutorials" / "llm_agents.html").read_text()
    assert "llm:local:" in llm and "openai:gpt-4o" in llm  # seats on the local model; a price
