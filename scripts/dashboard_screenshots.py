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
#: image name -> (page, rounds to play, height of the picture from the top of the page)
SHOTS = {
    "dashboard_fishery": ("fishery", 8, 1500),
    "dashboard_port_of_mars": ("port_of_mars", 6, 1500),
    "dashboard_common_pool": ("common_pool", 8, 1450),
}
#: true once the status line shows round ``r`` and every panel shows the same snapshot
CAUGHT_UP = """r => {
  const s = document.querySelector('[data-status]');
  if (!s || s.dataset.status === 'playing' || +s.dataset.round !== r) return false;
  return [...document.querySelectorAll('[data-token]')].every(e => e.dataset.token === s.dataset.token);
}"""


def start_server() -> tuple[subprocess.Popen[str], str]:
    return start_in_background(cwd=str(REPO))


def shoot(browser: object, url: str, name: str, page: str, rounds: int, height: int) -> Path:
    from PIL import Image

    tab = browser.new_page(viewport={"width": WIDTH, "height": max(height, 1000)})  # type: ignore[attr-defined]
    tab.set_default_timeout(90_000)
    tab.goto(url + page)
    tab.wait_for_selector(f"[data-page='{page}'] [data-status='ready']")
    for r in range(1, rounds + 1):
        if tab.locator("[data-status]").get_attribute("data-status") != "ready":
            break  # the game ended early (a collapse)
        tab.get_by_role("button", name="Step", exact=True).click()
        tab.wait_for_function(CAUGHT_UP, arg=r)
    tab.wait_for_timeout(1000)  # let Vega finish its transitions
    png = tab.screenshot(clip={"x": 0, "y": 0, "width": WIDTH, "height": height})
    tab.close()
    image = Image.open(BytesIO(png)).convert("RGB").quantize(colors=128)
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
