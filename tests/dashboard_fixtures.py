"""Shared helpers of the dashboard tests: the server, a real headless Chromium, page helpers.

The server is started the way a user starts it (``mesa-dilemmas dashboard``, here
as ``python -m mesa_dilemmas.viz.dashboard_cli``) on a free loopback port; the
browser is Debian's ``/usr/bin/chromium`` driven by Playwright's Python package
(no browser download).  What a test asserts is what the page shows: the
``data-metric`` / ``data-chart`` attributes the dashboard puts next to every
number and chart (see ``mesa_dilemmas/viz/dashboard/components.py``).

Missing browser, Playwright or npm (for Solara's front-end files) skip the
browser tests with the install command -- except on CI (``CI`` set), where they
fail: there, ``scripts/test.sh`` installs them and a skip would hide a broken set-up.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from llm_fixtures import wait_http

TESTS_DIR = Path(__file__).parent
REPO = TESTS_DIR.parent
ARTIFACTS = REPO / "test-artifacts" / "dashboard"
CHROMIUM = os.environ.get("MESA_DILEMMAS_CHROMIUM", "/usr/bin/chromium")
LAUNCH_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-quic", "--no-first-run", "--disable-component-update", "--disable-sync",
]  # fmt: skip
VIEWPORT = {"width": 1400, "height": 2000}
#: a round with LLM agents on the bundled model takes seconds; a rule round milliseconds
LLM_ROUND_TIMEOUT_MS = 180_000
ROUND_TIMEOUT_MS = 30_000


def unavailable(reason: str) -> None:
    """Skip locally, fail on CI (where the set-up must have installed everything)."""
    if os.environ.get("CI"):
        pytest.fail(f"dashboard browser tests cannot run: {reason}")
    pytest.skip(reason)


def require_browser() -> None:
    if importlib.util.find_spec("playwright") is None:
        unavailable("playwright is not installed (pip install 'mesa-dilemmas[dashboard]')")
    if not Path(CHROMIUM).exists():
        unavailable(f"{CHROMIUM} not found (Debian: apt-get install -y chromium)")


def require_assets() -> None:
    """Solara's front-end files in its proxy cache (fetched from the npm registry if missing)."""
    from mesa_dilemmas.viz.dashboard import assets

    if not assets.missing():
        return
    if shutil.which("npm") is None:
        unavailable(
            "Solara's front-end files are missing and npm is not installed (apt-get install -y npm)"
        )
    assets.install(quiet=True)


from llm_fixtures import free_port  # noqa: E402, F401 - one port picker for every test server


@pytest.fixture(scope="session", name="dashboard_url")
def dashboard_url_fixture(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``mesa-dilemmas dashboard --port P`` on 127.0.0.1: reads the address it prints.  One server
    for the whole browser pass (tests/conftest.py provides it): each tab is a new Solara session,
    and the tests that call a language model use their own loopback server (its port is in the
    spec, so no two share a cached answer) or, the local model, only one module."""
    require_browser()
    require_assets()
    for old in ARTIFACTS.glob("FAILED-*.png"):  # failure screenshots of an earlier session
        old.unlink()
    tmp = tmp_path_factory.mktemp("dashboard")
    config = tmp / "llm.toml"
    # short, answer-only replies: the bundled 135M model then answers a C/D decision in ~1 s
    config.write_text("[llm]\nreasoning = false\nmax_retries = 0\ntimeout_s = 20\n")
    with serve_dashboard(tmp, config) as url:
        yield url


@contextlib.contextmanager
def serve_dashboard(tmp: Path, config: Path) -> Iterator[str]:
    """``mesa-dilemmas dashboard --port P --llm-config CONFIG`` on 127.0.0.1, with its own LLM
    cache and records under ``tmp`` and no provider keys; yields the address it prints."""
    env = {
        **os.environ,
        "MESA_DILEMMAS_CACHE_DIR": str(tmp / "llm-cache"),  # every run makes real calls
        # the Compare and branch pages' runs folder: its own, not the checkout's runs/ (which
        # the main job, scripts/main.sh, fills) -- the pages start as on a fresh clone
        "MESA_DILEMMAS_RUNS_DIR": str(tmp / "runs"),
        "SOLARA_TELEMETRY_MIXPANEL_ENABLE": "False",
        "PYTHONUNBUFFERED": "1",
    }
    for var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"):
        env.pop(var, None)
    cmd = [
        sys.executable, "-m", "mesa_dilemmas.viz.dashboard_cli", "--port", str(free_port()),
        "--llm-config", str(config), "--record-dir", str(tmp / "records"), "--no-assets",
    ]  # fmt: skip
    with (tmp / "server.log").open("w") as log:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=log, text=True, env=env)
        try:
            assert proc.stdout is not None
            first = proc.stdout.readline()
            match = re.search(r"http://127\.0\.0\.1:\d+/", first)
            assert match, f"the dashboard did not print its address: {first!r}"
            url = match.group(0)
            wait_http(url, timeout=120.0, proc=proc)
            yield url
        finally:
            proc.terminate()  # the command stops its server on SIGTERM as on Ctrl-C
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@pytest.fixture(scope="module", name="browser")
def browser_fixture() -> Iterator[Any]:
    """Module-scoped on purpose: Playwright's sync API keeps an event loop running in the main
    thread while it is open, and later tests that run their own loop would fail."""
    require_browser()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture(name="tab")
def tab_fixture(browser: Any, dashboard_url: str, request: pytest.FixtureRequest) -> Iterator[Any]:
    """A fresh tab; errors thrown in the page fail the test; a screenshot is kept on failure too."""
    context = browser.new_context(viewport=VIEWPORT, user_agent="mesa-dilemmas-tests")
    tab = context.new_page()
    tab.set_default_timeout(60_000)
    errors: list[str] = []
    tab.on("pageerror", lambda exc: errors.append(str(exc)))
    tab.base_url = dashboard_url  # type: ignore[attr-defined]
    failed_before = request.session.testsfailed
    try:
        yield tab
        assert not errors, f"JavaScript errors on the page: {errors}"
    finally:
        # the call phase is reported before teardown: a higher count means this test failed
        if request.session.testsfailed > failed_before or errors:
            screenshot(tab, f"FAILED-{request.node.name}")
        context.close()


# -- page helpers ------------------------------------------------------------


def open_game(tab: Any, path: str) -> None:
    """Open a game's page and wait until its first snapshot is shown."""
    tab.goto(tab.base_url + path)
    tab.wait_for_selector(f"[data-page='{path}'] [data-status]", timeout=90_000)


def status(tab: Any) -> tuple[str, int]:
    el = tab.locator("[data-status]")
    return str(el.get_attribute("data-status")), int(el.get_attribute("data-round") or 0)


def metric(tab: Any, key: str) -> float:
    """The raw value of a ``data-metric`` element (nan for missing values)."""
    value = tab.locator(f"[data-metric='{key}']").get_attribute("data-value")
    return float(value) if value not in (None, "nan") else float("nan")


def metric_text(tab: Any, key: str) -> str:
    return str(tab.locator(f"[data-metric='{key}']").get_attribute("data-value"))


def chart(tab: Any, key: str) -> tuple[int, float]:
    """(points, latest value) of a chart's caption."""
    el = tab.locator(f"[data-chart='{key}']")
    last = el.get_attribute("data-last")
    return int(el.get_attribute("data-points") or 0), float(last) if last not in (
        None,
        "nan",
    ) else float("nan")


def table_rows(tab: Any, key: str) -> int:
    return int(tab.locator(f"[data-table='{key}']").get_attribute("data-rows") or 0)


#: true once the status line shows round ``r`` (not still playing) and every metric, chart and
#: agent view shows the same snapshot as the status line (``data-token``)
CAUGHT_UP = """r => {
  const s = document.querySelector('[data-status]');
  if (!s || s.dataset.status === 'playing' || +s.dataset.round !== r) return false;
  return [...document.querySelectorAll('[data-token]')].every(e => e.dataset.token === s.dataset.token);
}"""


def step(tab: Any, timeout_ms: int = ROUND_TIMEOUT_MS) -> int:
    """Press Step and wait until the page shows the next round everywhere (and not still playing)."""
    _, before = status(tab)
    tab.get_by_role("button", name="Step", exact=True).click()
    tab.wait_for_function(CAUGHT_UP, arg=before + 1, timeout=timeout_ms)
    return before + 1


def reset(tab: Any) -> None:
    """Press Reset and wait until the new model (a new ``data-model`` id) is shown."""
    old = tab.locator("[data-status]").get_attribute("data-model")
    tab.get_by_role("button", name="Reset", exact=True).click()
    tab.wait_for_selector(f"[data-status][data-round='0']:not([data-model='{old}'])")
    tab.wait_for_function(CAUGHT_UP, arg=0)


def control(tab: Any, label: str) -> Any:
    """The input whose label starts with the words ``label`` ("game" is not "games per agent")."""
    pattern = re.compile("^" + re.escape(label) + r"(?!\w)")
    return tab.locator(".v-input", has=tab.locator("label", has_text=pattern))


#: true once the value box beside the slider labelled ``label`` (a regex source) shows the
#: slider's value: the box is drawn from the server's value, so the server has the change
SLIDER_SYNCED = """(label) => {
  const re = new RegExp(label);
  for (const p of document.querySelectorAll('[data-param]')) {
    const lab = p.querySelector('label');
    if (!lab || !re.test(lab.textContent.trim())) continue;
    const thumb = p.querySelector('[role=slider]'), box = p.querySelector('input[type=number]');
    return !!thumb && !!box &&
      parseFloat(box.value) === parseFloat(thumb.getAttribute('aria-valuenow'));
  }
  return false;
}"""


def move_slider(tab: Any, label: str, steps: int) -> int:
    """Move a slider by ``steps`` (keyboard arrows, as a user can) and wait until the server
    has the new value (its value box shows it); returns the new value."""
    thumb = control(tab, label).locator("[role=slider]")
    thumb.focus()
    for _ in range(abs(steps)):
        tab.keyboard.press("ArrowRight" if steps > 0 else "ArrowLeft")
    tab.wait_for_function(SLIDER_SYNCED, arg="^" + re.escape(label) + r"(?!\w)")
    return int(float(thumb.get_attribute("aria-valuenow") or 0))


#: true once the game parameter labelled ``label`` (a regex source) holds ``value`` on the
#: server (its ``data-value`` is drawn from the server's value); true at once for an input that
#: is not a game parameter (the caller waits for what that input changes)
PARAM_SYNCED = """([label, value]) => {
  const re = new RegExp(label);
  for (const p of document.querySelectorAll('[data-param][data-value]')) {
    const lab = p.querySelector('label');
    if (lab && re.test(lab.textContent.trim())) return p.dataset.value === value;
  }
  return true;
}"""


def choose(tab: Any, label: str, option: str) -> None:
    control(tab, label).click()
    tab.get_by_role("option", name=option, exact=True).click()
    tab.wait_for_function(PARAM_SYNCED, arg=["^" + re.escape(label) + r"(?!\w)", option])


def type_into(tab: Any, label: str, text: str) -> None:
    box = control(tab, label).locator("input")
    box.fill(text)
    box.press("Enter")
    tab.wait_for_function(PARAM_SYNCED, arg=["^" + re.escape(label) + r"(?!\w)", text])


def screenshot(tab: Any, name: str) -> Path:
    """Save a screenshot of the page as a test artifact (``test-artifacts/dashboard/``)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    tab.screenshot(path=str(path), full_page=True)
    return path
