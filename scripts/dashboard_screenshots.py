"""Retake the dashboard screenshots of the README and docs/dashboard.md (docs/images/).

Starts ``mesa-dilemmas dashboard`` on a free loopback port, plays each page in headless
Chromium (Debian's ``/usr/bin/chromium`` driven by Playwright, as the browser tests do)
and saves the top of the page -- metrics, agent view, first charts -- palette-reduced::

    .venv/bin/python scripts/dashboard_screenshots.py              # every image
    .venv/bin/python scripts/dashboard_screenshots.py fishery      # one of them

Rule-based agents and the pages' default parameters (seed 42), so a rerun gives the
same pictures.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from io import BytesIO
from pathlib import Path

from mesa_dilemmas.viz.dashboard_cli import start_in_background

REPO = Path(__file__).resolve().parent.parent
IMAGES = REPO / "docs" / "images"
CHROMIUM = os.environ.get("MESA_DILEMMAS_CHROMIUM", "/usr/bin/chromium")
WIDTH = 1400
#: image name -> (page, rounds to play, height of the picture from the top of the page,
#: selects set before the game starts: label -> option)
SHOTS: dict[str, tuple[str, int, int, dict[str, str]]] = {
    "dashboard_fishery": ("fishery", 6, 1500, {}),  # round 6 of seed 42: 5 sanctions (arrows)
    # a leader (the diamond) told to the players; round 6 of seed 42 has accepted trades (arrows)
    "dashboard_port_of_mars": ("port_of_mars", 6, 1500, {"leadership": "announce"}),
    "dashboard_common_pool": ("common_pool", 8, 1450, {}),
}
#: true once the status line shows round ``r``, every panel shows the same snapshot and every
#: chart has drawn it
CAUGHT_UP = """r => {
  const s = document.querySelector('[data-status]');
  if (!s || s.dataset.status === 'playing' || +s.dataset.round !== r) return false;
  const t = s.dataset.token;
  return [...document.querySelectorAll('[data-token]')].every(e => e.dataset.token === t) &&
    [...document.querySelectorAll('.mdd-vega')].every(e => e.dataset.drawn === t);
}"""
#: true once the parameter ``name`` holds ``value`` on the server
HOLDS = "([n, v]) => { const p = document.querySelector(`[data-param='${n}']`); return !!p && p.dataset.value === v; }"


def start_server() -> tuple[subprocess.Popen[str], str]:
    return start_in_background(cwd=str(REPO))


def shoot(
    browser: object, url: str, name: str, page: str, rounds: int, height: int, selects: dict
) -> Path:
    from PIL import Image

    tab = browser.new_page(viewport={"width": WIDTH, "height": max(height, 1000)})  # type: ignore[attr-defined]
    tab.set_default_timeout(90_000)
    tab.goto(url + page)
    tab.wait_for_selector(f"[data-page='{page}'] [data-status='ready']")
    if selects:
        for param, option in selects.items():
            tab.locator(f"[data-param='{param}'] .v-input").click()
            tab.get_by_role("option", name=option, exact=True).click()
            tab.wait_for_function(HOLDS, arg=[param, option])
        model = tab.locator("[data-status]").get_attribute("data-model")
        tab.get_by_role("button", name="Reset", exact=True).click()
        tab.wait_for_selector(f"[data-status][data-round='0']:not([data-model='{model}'])")
    for r in range(1, rounds + 1):
        if tab.locator("[data-status]").get_attribute("data-status") != "ready":
            break  # the game ended early (a collapse)
        tab.get_by_role("button", name="Step", exact=True).click()
        tab.wait_for_function(CAUGHT_UP, arg=r)
    png = tab.screenshot(clip={"x": 0, "y": 0, "width": WIDTH, "height": height})
    tab.close()
    # 256 colours chosen by octree keep every series' and marker's own colour (a 128-colour
    # median cut had merged the lighter legend swatches into grey)
    image = Image.open(BytesIO(png)).convert("RGB").quantize(256, Image.Quantize.FASTOCTREE)
    path = IMAGES / f"{name}.png"
    image.save(path, optimize=True)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help=f"images to retake (default: {', '.join(SHOTS)})")
    args = parser.parse_args(argv)
    names = [n if n.startswith("dashboard_") else f"dashboard_{n}" for n in args.names] or list(
        SHOTS
    )
    unknown = [n for n in names if n not in SHOTS]
    if unknown:
        print(f"names: unknown image {unknown[0]!r} (one of {', '.join(SHOTS)})", file=sys.stderr)
        return 2
    from playwright.sync_api import sync_playwright

    IMAGES.mkdir(parents=True, exist_ok=True)
    proc, url = start_server()
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(
                executable_path=CHROMIUM, args=["--headless", "--no-sandbox", "--disable-gpu"]
            )
            for name in names:
                path = shoot(browser, url, name, *SHOTS[name])
                print(f"{path.relative_to(REPO)}: {path.stat().st_size // 1024} KB")
            browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
