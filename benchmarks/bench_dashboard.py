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
  seconds of playing (a game that ends is Reset and played on), and how often each chart
  was drawn in that time.

"Shows the next round" means drawn: the status line's ``data-round``, every
``data-token``, and every chart's ``data-drawn`` (set by the chart widget once Vega has
rendered the new rows).  Both ways of drawing a round are timed in one run, each with its
own server, and compared: the chart widget's in-place update and a full vega-embed of
every spec per round (Solara's ``VegaLite`` widget's way, ``MESA_DILEMMAS_CHARTS_IN_PLACE=0``).

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
#: round ``r`` is on the status line, every metric, caption and agent view holds the same
#: snapshot (``data-token``) and every chart and agent view has been *drawn* from it
#: (``data-drawn`` of the chart widget, set once Vega has rendered the new rows)
SHOWN = """r => {
  const s = document.querySelector('[data-status]');
  if (!s || s.dataset.status === 'playing' || +s.dataset.round < r) return false;
  const t = s.dataset.token;
  return [...document.querySelectorAll('[data-token]')].every(e => e.dataset.token === t)
    && [...document.querySelectorAll('.mdd-vega')].every(e => e.dataset.drawn === t);
}"""
#: how many times the page's charts have been drawn (embedded or updated in place), in all
DRAWS = """() => [...document.querySelectorAll('.mdd-vega')]
  .reduce((n, e) => n + +(e.dataset.embeds || 0) + +(e.dataset.updates || 0), 0)"""
CHARTS = "() => document.querySelectorAll('.mdd-vega').length"
#: ▶ is back (paused), or the game is over (Mesa then leaves a disabled ❚❚)
PAUSED_OR_FINISHED = (
    "() => [...document.querySelectorAll('button')].some(b => b.innerText.trim() === '▶') || ("
    + FINISHED
    + ")"
)
#: sliders moved to their maximum before measuring (Port of Mars ends after 9 rounds by default)
LONGEST = {"port_of_mars": ["rounds"]}


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
        # the value box beside the slider is drawn from the server's value: wait until it
        # shows the maximum, so that Reset builds the game with it
        box = tab.locator("[data-param]", has=tab.locator("label", has_text=pattern)).locator(
            "input[type=number]"
        )
        tab.wait_for_function(
            "([b, s]) => parseFloat(b.value) === parseFloat(s.getAttribute('aria-valuemax'))",
            arg=[box.element_handle(), slider.element_handle()],
        )
    if LONGEST.get(path):
        old = tab.locator("[data-status]").get_attribute("data-model")
        tab.get_by_role("button", name="Reset", exact=True).click()
        tab.wait_for_selector(f"[data-status][data-round='0']:not([data-model='{old}'])")


def play_rate(tab: Any, seconds: float) -> tuple[float, int, float]:
    """(rounds per second, rounds, chart draws per chart and second) with Play at its shortest
    pause, over ``seconds`` of playing.  A game that ends (Port of Mars collapses within a few
    rounds with rule players) is Reset and played on, so every page is timed over the same
    window; the Resets are not counted in it."""
    slider = tab.locator("[data-param='play_interval'] [role=slider]")
    slider.focus()
    tab.keyboard.press("Home")  # the shortest pause
    tab.wait_for_function("s => +s.getAttribute('aria-valuenow') <= 1", arg=slider.element_handle())
    played, elapsed, draws = 0, 0.0, 0
    while elapsed < seconds:
        if tab.evaluate(FINISHED):
            old = tab.locator("[data-status]").get_attribute("data-model")
            tab.get_by_role("button", name="Reset", exact=True).click()
            tab.wait_for_selector(f"[data-status][data-round='0']:not([data-model='{old}'])")
        start_round, start_draws = current_round(tab), int(tab.evaluate(DRAWS))
        tab.get_by_role("button", name="▶").click()
        start = time.perf_counter()
        try:  # the rest of the window, cut short when the game ends
            tab.wait_for_function(FINISHED, timeout=(seconds - elapsed) * 1000)
            finished = True
        except PlaywrightTimeout:
            finished = False
        played += current_round(tab) - start_round
        draws += int(tab.evaluate(DRAWS)) - start_draws
        elapsed += time.perf_counter() - start
        if not finished and not tab.evaluate(FINISHED):
            pause(tab)
    charts = max(1, int(tab.evaluate(CHARTS)))
    return played / elapsed, played, draws / charts / elapsed


def pause(tab: Any, attempts: int = 12) -> None:
    """Click ❚❚ until the page says paused (▶ is back) or the game is over.  On a busy machine
    a click can land while Mesa's Play loop re-renders the button and be swallowed; each
    attempt waits up to 10 s for the page to react, and the whole is bounded."""
    for _ in range(attempts):
        if tab.evaluate(PAUSED_OR_FINISHED):
            return
        with contextlib.suppress(PlaywrightTimeout):  # the game may end in between
            tab.get_by_role("button", name="❚❚").click(timeout=5000)
        with contextlib.suppress(PlaywrightTimeout):
            tab.wait_for_function(PAUSED_OR_FINISHED, timeout=10_000)
            return
    raise RuntimeError(f"the page did not pause after {attempts} clicks on ❚❚")


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
    rate, played, drawn = play_rate(tab, seconds)
    print(
        f"{path}: Play {rate:.2f} rounds/s, each chart drawn {drawn:.2f} times/s", file=sys.stderr
    )
    context.close()
    return {
        "page": path,
        "step_ms_median": round(statistics.median(latencies), 1),
        "step_ms_p90": round(sorted(latencies)[int(0.9 * (len(latencies) - 1))], 1),
        "step_ms_median_playwright_click": round(statistics.median(driven), 1),
        "play_rounds_per_s": round(rate, 2),
        "play_rounds": played,
        "play_chart_draws_per_s": round(drawn, 2),
        "play_seconds": seconds,
    }


#: the two ways of drawing a round that one run compares: the chart widget's in-place update
#: of the rows, and a full vega-embed of every spec (what Solara's ``VegaLite`` widget does)
MODES = {
    "in place": {"MESA_DILEMMAS_CHARTS_IN_PLACE": "1"},
    "full embed": {"MESA_DILEMMAS_CHARTS_IN_PLACE": "0"},
}
RATIOS = ("step_ms_median", "step_ms_p90", "play_rounds_per_s", "play_chart_draws_per_s")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", default="fishery,port_of_mars")
    parser.add_argument("--steps", type=int, default=16, help="Step clicks per page (default 16)")
    parser.add_argument(
        "--seconds", type=float, default=10.0, help="Play window per page (default 10)"
    )
    parser.add_argument(
        "--modes", default=",".join(MODES), help="which of 'in place', 'full embed' (default both)"
    )
    args = parser.parse_args(argv)
    from playwright.sync_api import sync_playwright

    results = []
    load = os.getloadavg()
    print(
        f"machine load (1, 5, 15 min): {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} "
        f"on {os.cpu_count()} cores",
        file=sys.stderr,
    )
    for mode in args.modes.split(","):
        print(f"-- charts drawn: {mode}", file=sys.stderr)
        proc, url = start_in_background(env=MODES[mode])
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
                for path in args.pages.split(","):
                    row = bench_page(browser, url, path, args.steps, args.seconds)
                    results.append({"charts": mode, **row})
                browser.close()
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    after = os.getloadavg()
    for row in results:
        row["load_before_1min"], row["load_after_1min"] = round(load[0], 2), round(after[0], 2)
    print(json.dumps(results, indent=2))
    print(
        f"machine load after (1, 5, 15 min): {after[0]:.2f} {after[1]:.2f} {after[2]:.2f}",
        file=sys.stderr,
    )
    by = {(r["charts"], r["page"]): r for r in results}
    if all(m in args.modes.split(",") for m in MODES):
        print("\nin place / full embed:", file=sys.stderr)
        for path in args.pages.split(","):
            new, old = by[("in place", path)], by[("full embed", path)]
            ratios = ", ".join(
                f"{k} {new[k] / old[k]:.2f}x" for k in RATIOS if old.get(k) and new.get(k)
            )
            print(f"  {path}: {ratios}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
