"""README's findings table says what the committed reproduction report says, claim by claim."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location(
    "readme_findings", ROOT / "scripts" / "readme_findings.py"
)
findings = importlib.util.module_from_spec(spec)
spec.loader.exec_module(findings)


def test_readme_findings_agree_with_the_report():
    readme = (ROOT / "README.md").read_text()
    report = (ROOT / "docs" / "reproduction.md").read_text()
    rows, _ = findings.report_rows(report)
    assert len(rows) >= 15 and {p for p, *_ in rows} == {"001", "002", "003"}
    assert findings.updated(readme, report) == readme, "run python scripts/readme_findings.py"


def test_a_changed_verdict_is_caught():
    readme = (ROOT / "README.md").read_text()
    report = (ROOT / "docs" / "reproduction.md").read_text()
    row = next(line for line in report.splitlines() if line.endswith("| **reproduced** |"))
    changed = report.replace(row, row.replace("**reproduced**", "**not reproduced**"))
    assert findings.updated(readme, changed) != readme
