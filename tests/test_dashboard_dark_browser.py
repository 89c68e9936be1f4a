"""Dark mode in a real headless Chromium (issue 28, item 1): the agent views' text reads on the
dark card, and the theme button has an accessible name.

The contrast is computed from what is drawn: for every text item of the view's Vega scene, its
fill against the colour most of its box is painted in (the canvas pixels, composited over the
card's own background), by WCAG's formula; every ratio must be at least 4.5.

Same server and browser as ``test_dashboard_browser.py`` (see ``dashboard_fixtures``).
"""

from __future__ import annotations

import re

import pytest
from dashboard_fixtures import (  # noqa: F401
    browser_fixture,
    open_game,
    screenshot,
    step,
    tab_fixture,
)

#: [(text, fill, background, ratio)] for every non-empty text item of the agent view's chart
TEXT_CONTRAST = """kind => {
  const view = document.querySelector(`[data-view='${kind}']`);
  const plot = view && [...view.querySelectorAll('*')].find(e => e.mddView);
  if (!plot) return null;
  const canvas = plot.querySelector('canvas');
  if (!canvas) return null;
  const ctx = canvas.getContext('2d');
  const dpr = canvas.width / canvas.getBoundingClientRect().width;
  const probe = document.createElement('canvas').getContext('2d');
  const rgb = c => { probe.fillStyle = '#000'; probe.fillStyle = c;
    const h = probe.fillStyle; if (h[0] === '#') return [1, 3, 5].map(i => parseInt(h.slice(i, i + 2), 16));
    return h.match(/[\\d.]+/g).slice(0, 3).map(Number); };
  let card = null;
  for (let e = plot; e && !card; e = e.parentElement) {
    const m = getComputedStyle(e).backgroundColor.match(/[\\d.]+/g);
    if (m && (m.length < 4 || +m[3] > 0)) card = m.slice(0, 3).map(Number);
  }
  card = card || [255, 255, 255];
  const lum = c => { const v = c.map(x => x / 255).map(x => x <= 0.03928 ? x / 12.92 : ((x + 0.055) / 1.055) ** 2.4);
    return 0.2126 * v[0] + 0.7152 * v[1] + 0.0722 * v[2]; };
  const ratio = (a, b) => { const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p); return (x + 0.05) / (y + 0.05); };
  const origin = plot.mddView.origin();
  const out = [];
  const walk = (scene, ox, oy) => {
    for (const item of scene.items || []) {
      if (scene.marktype === 'group') { walk_group(item, ox + (item.x || 0), oy + (item.y || 0)); continue; }
      if (scene.marktype !== 'text' || !item.text || !String(item.text).trim()) continue;
      const b = item.bounds;
      const x = Math.max(0, Math.floor((b.x1 + ox + origin[0]) * dpr));
      const y = Math.max(0, Math.floor((b.y1 + oy + origin[1]) * dpr));
      const w = Math.min(canvas.width - x, Math.ceil((b.x2 - b.x1) * dpr));
      const h = Math.min(canvas.height - y, Math.ceil((b.y2 - b.y1) * dpr));
      if (w <= 0 || h <= 0) continue;
      const px = ctx.getImageData(x, y, w, h).data;
      const counts = new Map();
      for (let i = 0; i < px.length; i += 4) {
        const a = px[i + 3] / 255;
        const c = [0, 1, 2].map(k => Math.round(px[i + k] * a + card[k] * (1 - a)));
        const key = c.map(v => v >> 3).join(',');
        const e = counts.get(key) || { n: 0, c };
        e.n += 1; counts.set(key, e);
      }
      const background = [...counts.values()].sort((p, q) => q.n - p.n)[0].c;
      const fill = rgb(item.fill || '#000');
      out.push([String(item.text), fill, background, ratio(fill, background)]);
    }
  };
  const walk_group = (group, ox, oy) => { for (const child of group.items || []) walk(child, ox, oy); };
  walk(plot.mddView.scenegraph().root, 0, 0);
  return out;
}"""


def dark(tab) -> None:  # noqa: ANN001
    """Click the theme button, found by its accessible name, until the page is dark."""
    for _ in range(3):
        if tab.locator(".v-application.theme--dark").count():
            return
        button = tab.get_by_role("button", name=re.compile(r"^colour theme: "))
        name = button.get_attribute("aria-label")
        button.click()
        tab.wait_for_function(
            "before => [...document.querySelectorAll('button')].some(b =>"
            " (b.getAttribute('aria-label') || '').startsWith('colour theme: ')"
            " && b.getAttribute('aria-label') !== before)",
            arg=name,
        )
    assert tab.locator(".v-application.theme--dark").count() == 1


@pytest.mark.parametrize(
    ("path", "kind"), [("fishery", "fishery-lake"), ("port_of_mars", "port-of-mars-seats")]
)
def test_agent_views_text_reads_on_the_dark_card(tab, path: str, kind: str) -> None:  # noqa: ANN001
    open_game(tab, path)
    step(tab)
    button = tab.get_by_role("button", name=re.compile(r"^colour theme: "))
    assert button.count() == 1
    assert "click to switch" in (button.get_attribute("aria-label") or "")
    dark(tab)
    # the view is drawn anew in the dark theme: its canvas has no opaque background any more
    tab.wait_for_function(
        """kind => { const c = document.querySelector(`[data-view='${kind}'] canvas`);
        return c && c.getContext('2d').getImageData(2, 2, 1, 1).data[3] === 0; }""",
        arg=kind,
    )
    texts = tab.evaluate(TEXT_CONTRAST, kind)
    assert texts, "no text drawn in the view"
    poor = [t for t in texts if t[3] < 4.5]
    tab.locator(f"[data-view='{kind}']").scroll_into_view_if_needed()
    screenshot(tab, f"{path}_dark")
    assert not poor, f"text below WCAG 4.5:1 on the dark card: {poor}"
