"""Mesa's own ``SolaraViz`` page, written as a user would, in a real headless Chromium.

``tests/dashboard_user_page.py`` is ``SolaraViz(model, components=[make_plot_component("stock"),
FisheryLake])``: Mesa's component grid must show Mesa's chart (it stays blank with a Vue 3
front end, or without the grid's front-end file) and this package's agent view, and both
must follow Step.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dashboard_fixtures import (  # noqa: F401
    LAUNCH_ARGS,
    VIEWPORT,
    browser_fixture,
    free_port,
    require_assets,
    require_browser,
    screenshot,
)
from llm_fixtures import wait_http

USER_PAGE = Path(__file__).parent / "dashboard_user_page.py"

#: the share of non-white pixels of an image or a canvas (a blank chart area has none)
INK = """img => {
  let c = img;
  if (img.tagName !== 'CANVAS') {
    c = document.createElement('canvas');
    c.width = img.naturalWidth; c.height = img.naturalHeight;
    c.getContext('2d').drawImage(img, 0, 0);
  }
  const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
  let ink = 0;
  for (let i = 0; i < d.length; i += 4) if (d[i] + d[i + 1] + d[i + 2] < 600) ink++;
  return ink / (c.width * c.height);
}"""


@pytest.fixture(scope="module", name="user_page_url")
def user_page_url_fixture(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    require_browser()
    require_assets()
    port = free_port()
    log = (tmp_path_factory.mktemp("user-page") / "server.log").open("w")
    env = {**os.environ, "SOLARA_TELEMETRY_MIXPANEL_ENABLE": "False"}
    cmd = [
        sys.executable, "-m", "solara", "run", str(USER_PAGE), "--host", "127.0.0.1",
        "--port", str(port), "--production", "--no-open", "--no-check-version",
    ]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=log, stderr=log, env=env)
    try:
        url = f"http://127.0.0.1:{port}/"
        wait_http(url, timeout=120.0, proc=proc)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        log.close()


def test_a_plain_solaraviz_page_shows_mesas_chart_and_the_fishery_view(
    browser: Any, user_page_url: str
) -> None:
    context = browser.new_context(viewport=VIEWPORT)
    tab = context.new_page()
    errors: list[str] = []
    tab.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        tab.goto(user_page_url)
        plot = tab.locator(".vue-grid-item img").first
        plot.wait_for(timeout=90_000)
        tab.wait_for_function(
            "img => img.complete && img.naturalWidth > 100", arg=plot.element_handle()
        )
        box = plot.bounding_box()
        assert box is not None and box["width"] > 200 and box["height"] > 150
        assert tab.evaluate(INK, plot.element_handle()) > 0.01  # axes, ticks and labels
        view = tab.locator(".vue-grid-item [data-view='fishery-lake']")
        assert view.get_attribute("data-agents") == "10"
        # Vega draws the lake and the villagers in the browser
        canvas = view.locator("canvas.marks")
        canvas.wait_for()
        tab.wait_for_function(f"c => ({INK})(c) > 0.03", arg=canvas.element_handle())
        before = plot.get_attribute("src")
        for expected in (1, 2):
            tab.get_by_role("button", name="Step").click()
            tab.wait_for_selector(f"[data-view='fishery-lake'][data-round='{expected}']")
        tab.wait_for_function(
            "([img, old]) => img.src !== old", arg=[plot.element_handle(), before]
        )
        assert re.search(r"shared norm", view.inner_text())
        screenshot(tab, "user_solaraviz_page")
        assert not errors, f"JavaScript errors on the page: {errors}"
    finally:
        context.close()
