"""How fast the dashboard plays: rounds per second under ▶ and the latency of one Step.

Starts ``mesa-dilemmas dashboard`` on a free loopback port, opens each page in
Debian's headless Chromium (Playwright; no browser download) with a viewport tall
enough that every panel is visible, then

* **Step latency** -- clicks Step and times until the page shows the next round
  everywhere (the status line's ``data-round``, every ``data-token``); median and 90th
  percentile of the clicks made inside the page and timed by its clock (every other one of
  ``--steps`` clicks), and the median of the others, made by Playwright (the earlier method, which adds
  Playwright's own actionability checks before the click reaches the page);
* **Play rate** -- sets the sidebar's "pause between rounds while playing" (Mesa's play
  interval) to its minimum, presses ▶ and counts the rounds the page shows in ``--seconds``
  seconds.

Rule-based agents only (the pages' defaults).  Not a test: numbers depend on the
machine.  Results as JSON on stdout; ``docs/dashboard.md`` quotes them.

    nice -n 10 python benchmarks/bench_dashboard.py            # fishery and Port of Mars
    python benchmarks/bench_dashboard.py --pages fishery --steps 5 --seconds 5
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import statistics
import subprocess
import sys
import time
from typing import Any

from mesa_dilemmas.viz.dashboard_cli import start_in_background

CHROMIUM = os.environ.get("MESA_DILEMMAS_CHROMIUM", "/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
VIEWPORT = {"width": 1400, "height": 4000}  # every panel of a page on screen
ROUND = "+(document.querySelector('[data-status]') || {dataset: {round: -1}}).dataset.round"
FINISHED = (
    "(document.querySelector('[data-status]') || {dataset: {}}).dataset.status === 'finished'"
)
#: round ``r`` is on the status line and every metric, chart and agent view shows the same
#: snapshot (``data-token``; pages without tokens count from the status line alone)
SHOWN = """r => {
  const s = document.querySelector('[data-status]');
  if (!s || s.dataset.status === 'playing' || +s.dataset.round < r) return false;
  return [...document.querySelectorAll('[data-token]')].every(e => e.dataset.token === s.dataset.token);
}"""
#: sliders moved to their maximum before measuring (Port of Mars ends after 9 rounds by default)
LONGEST = {"port_of_mars": ["rounds"]}


def start_server() -> tuple[subprocess.Popen[str], str]:
    return start_in_background()


try:
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
except ImportError:  # reported when main() starts
    PlaywrightTimeout = TimeoutError  # noqa: N816


def current_round(tab: Any) -> int:
    return int(tab.evaluate(ROUND))


#: clicks the button inside the page and resolves with the milliseconds (the page's clock) until
#: round ``r`` is shown everywhere (``SHOWN``), checked on every animation frame
CLICK_TO_SHOWN = (
    """([button, r]) => new Promise(resolve => {
  const shown = """
    + SHOWN
    + """;
  const start = performance.now();
  const check = () => shown(r) ? resolve(performance.now() - start) : requestAnimationFrame(check);
  button.click();
  requestAnimationFrame(check);
})"""
)


def step_latency(tab: Any, steps: int) -> tuple[list[float], list[float]]:
    """Milliseconds from the Step click until every panel shows the next round, ``steps`` clicks
    alternating two ways: clicked inside the page and timed by the page's clock, and clicked by
    Playwright
    (which first scrolls to the button and waits until it is stable and enabled: under load
    that alone takes 70-400 ms, before the page has seen the click)."""
    in_page, driven = [], []
    button = tab.get_by_role("button", name="Step", exact=True)
    for i in range(steps):
        before = current_round(tab)
        if i % 2 == 0:
            in_page.append(
                float(tab.evaluate(CLICK_TO_SHOWN, [button.element_handle(), before + 1]))
            )
        else:
            start = time.perf_counter()
            button.click()
            tab.wait_for_function(SHOWN, arg=before + 1, polling="raf")
            driven.append((time.perf_counter() - start) * 1000)
        # the Step button is usable again: Mesa's handler has returned
        tab.wait_for_function("b => !b.disabled", arg=button.element_handle())
    return in_page, driven


def longest_game(tab: Any, path: str) -> None:
    """Sliders of ``LONGEST`` to their maximum, then Reset (a new model, round 0)."""
    for label in LONGEST.get(path, []):
        pattern = re.compile("^" + re.escape(label) + r"(?!\w)")
        slider = tab.locator(".v-input", has=tab.locator("label", has_text=pattern)).locator(
            "[role=slider]"
        )
        slider.focus()
        tab.keyboard.press("End")
    if LONGEST.get(path):
        old = tab.locator("[data-status]").get_attribute("data-model")
        tab.get_by_role("button", name="Reset", exact=True).click()
        tab.wait_for_selector(f"[data-status][data-round='0']:not([data-model='{old}'])")


def play_rate(tab: Any, seconds: float) -> tuple[float, int]:
    """(rounds per second, rounds) with Play at its shortest pause, over ``seconds`` or until
    the game is over."""
    slider = tab.locator("[data-param='play_interval'] [role=slider]")
    slider.focus()
    tab.keyboard.press("Home")  # the shortest pause
    tab.wait_for_function("s => +s.getAttribute('aria-valuenow') <= 1", arg=slider.element_handle())
    start_round = current_round(tab)
    tab.get_by_role("button", name="▶").click()
    start = time.perf_counter()
    try:  # a fixed window, cut short when the game ends
        tab.wait_for_function(FINISHED, timeout=seconds * 1000)
        finished = True
    except PlaywrightTimeout:
        finished = False
    played = current_round(tab) - start_round
    elapsed = time.perf_counter() - start
    if not finished and not tab.evaluate(FINISHED):
        with contextlib.suppress(PlaywrightTimeout):  # the game may end in between: ▶ again
            tab.get_by_role("button", name="❚❚").click(timeout=5000)
        tab.get_by_role("button", name="▶").wait_for()
    return played / elapsed, played


def bench_page(browser: Any, url: str, path: str, steps: int, seconds: float) -> dict[str, Any]:
    context = browser.new_context(viewport=VIEWPORT)
    tab = context.new_page()
    tab.set_default_timeout(120_000)
    tab.goto(url + path)
    tab.wait_for_selector(f"[data-page='{path}'] [data-status]")
    tab.wait_for_timeout(2000)  # let the first render and the assets settle
    longest_game(tab, path)
    latencies, driven = step_latency(tab, steps)
    print(
        f"{path}: Step {statistics.median(latencies):.0f} ms (median, in page; "
        f"{statistics.median(driven):.0f} ms clicked by Playwright)",
        file=sys.stderr,
    )
    rate, played = play_rate(tab, seconds)
    print(f"{path}: Play {rate:.2f} rounds/s", file=sys.stderr)
    context.close()
    return {
        "page": path,
        "step_ms_median": round(statistics.median(latencies), 1),
        "step_ms_p90": round(sorted(latencies)[int(0.9 * (len(latencies) - 1))], 1),
        "step_ms_median_playwright_click": round(statistics.median(driven), 1),
        "play_rounds_per_s": round(rate, 2),
        "play_rounds": played,
        "play_seconds": seconds,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", default="fishery,port_of_mars")
    parser.add_argument("--steps", type=int, default=16, help="Step clicks per page (default 16)")
    parser.add_argument(
        "--seconds", type=float, default=10.0, help="Play window per page (default 10)"
    )
    args = parser.parse_args(argv)
    from playwright.sync_api import sync_playwright

    proc, url = start_server()
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            results = [
                bench_page(browser, url, path, args.steps, args.seconds)
                for path in args.pages.split(",")
            ]
            browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
