"""No sentence of the three papers in the project: every string literal of the package, the
tests and the example, every prompt and data file of the package, and the docs outside
quotations share no run of 8 or more words with the papers in ``../shared/papers/``.

The papers' information (rules, parameters, what a prompt asks) is used everywhere; their
words are not. A docs line that quotes a paper as a quotation (a ``>`` block) is allowed."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAPERS = ROOT.parent / "shared" / "papers"
RUN = 8  # words
WORD = re.compile(r"[a-z0-9]+")


def words(text: str) -> list[str]:
    return WORD.findall(text.lower())


def runs(seq: list[str]) -> Iterator[tuple[str, ...]]:
    for i in range(len(seq) - RUN + 1):
        yield tuple(seq[i : i + RUN])


#: a paper's title block: citing a paper by its title is not copying it
TITLE_WORDS = 40


@pytest.fixture(scope="module")
def paper_runs() -> dict[tuple[str, ...], str]:
    files = sorted(PAPERS.glob("*.txt"))
    if not files:
        pytest.skip(f"the papers are not beside the checkout ({PAPERS})")
    out: dict[tuple[str, ...], str] = {}
    titles: set[tuple[str, ...]] = set()
    for f in files:
        seq = words(f.read_text(encoding="utf-8"))
        titles.update(runs(seq[:TITLE_WORDS]))
        for r in runs(seq):
            out.setdefault(r, f.name[:3])
    return {r: paper for r, paper in out.items() if r not in titles}


def python_strings(path: Path) -> Iterator[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node.lineno, node.value
        elif isinstance(node, ast.JoinedStr):  # an f-string: its literal parts, joined
            parts = [v.value for v in node.values if isinstance(v, ast.Constant)]
            yield node.lineno, " ".join(str(p) for p in parts)


def texts() -> Iterator[tuple[str, str]]:
    """(where, text) for everything that must not carry a paper's words."""
    for base in (
        ROOT / "mesa_dilemmas",
        ROOT / "tests",
        ROOT / "examples",
        ROOT / "scripts",
        ROOT / "benchmarks",
    ):
        for path in sorted(base.rglob("*.py")):
            if path.resolve() == Path(__file__).resolve():
                continue
            for line, text in python_strings(path):
                yield f"{path.relative_to(ROOT)}:{line}", text
    for path in sorted((ROOT / "mesa_dilemmas").rglob("*")):
        if path.suffix in {".toml", ".txt", ".md", ".json"} and path.is_file():
            yield str(path.relative_to(ROOT)), path.read_text(encoding="utf-8")
    for path in sorted((ROOT / "tests").rglob("*")):
        if path.suffix in {".toml", ".txt", ".json"} and path.is_file():
            yield str(path.relative_to(ROOT)), path.read_text(encoding="utf-8")
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        kept = [
            ln for ln in path.read_text(encoding="utf-8").splitlines() if not ln.startswith(">")
        ]
        yield str(path.relative_to(ROOT)), "\n".join(kept)


def shared_runs(text: str, paper_runs: dict[tuple[str, ...], str]) -> list[str]:
    found, seq, i = [], words(text), 0
    while i <= len(seq) - RUN:
        window = tuple(seq[i : i + RUN])
        if window in paper_runs:
            j = i + RUN
            while j < len(seq) and tuple(seq[j - RUN + 1 : j + 1]) in paper_runs:
                j += 1
            found.append(f'paper {paper_runs[window]}: "{" ".join(seq[i:j])}"')
            i = j
        else:
            i += 1
    return found


def test_the_check_finds_a_copied_sentence(paper_runs):
    sentence = " ".join(next(iter(paper_runs)))
    assert shared_runs(f"Before. {sentence.upper()}, after.", paper_runs)
    assert not shared_runs("a sentence of our own words that no paper has in it at all", paper_runs)


def test_no_paper_sentence_in_the_project(paper_runs):
    hits = [f"{where}: {hit}" for where, text in texts() for hit in shared_runs(text, paper_runs)]
    assert not hits, f"{len(hits)} runs of {RUN}+ words shared with the papers:\n" + "\n".join(
        hits[:80]
    )
