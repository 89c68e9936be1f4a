"""The chart widget in a real headless Chromium: rows updated in place, zoom kept, export.

A chart is embedded once and then handed each round's rows (``vega_widget``); the
drawn element reports the snapshot it shows (``data-drawn``) and counts embeds and
in-place updates.  Also: a wheel zoom survives the next rounds, the chart's menu
saves it as SVG and PNG, and the agent views draw what the game did (counted in Vega's
scenegraph, the marks on the canvas).
"""

from __future__ import annotations

from pathlib import Path

from dashboard_fixtures import (  # noqa: F401
    browser_fixture,
    choose,
    open_game,
    reset,
    step,
    tab_fixture,
)

#: every chart widget on the page has drawn the snapshot the status line shows
ALL_DRAWN = """() => {
  const t = document.querySelector('[data-status]').dataset.token;
  return [...document.querySelectorAll('.mdd-vega')].every(e => e.dataset.drawn === t);
}"""


def vega(tab, key: str):
    """The drawn element of the chart whose caption is ``data-chart=key``."""
    return tab.locator(f".v-card:has([data-chart='{key}']) .mdd-vega")


def play(tab, rounds: int) -> None:
    for _ in range(rounds):
        step(tab)
    tab.wait_for_function(ALL_DRAWN)


def test_charts_are_embedded_once_then_updated_in_place(tab) -> None:
    open_game(tab, "fishery")
    play(tab, 4)
    stock = vega(tab, "stock")
    assert stock.get_attribute("data-embeds") == "1"
    assert int(stock.get_attribute("data-updates") or 0) >= 1
    # the drawn view holds the stock of rounds 0-4, the same numbers as the caption's latest
    rows = stock.evaluate("e => e.mddView.data('mdd_rows0')")
    assert [r["x"] for r in rows] == [0, 1, 2, 3, 4]
    latest = float(tab.locator("[data-chart='stock']").get_attribute("data-last"))
    assert abs(rows[-1]["y"] - latest) < 1e-5  # the caption rounds to 6 decimals
    # the lake view too: one embed, its villagers' rows replaced each round
    lake = tab.locator("[data-view='fishery-lake'] .mdd-vega")
    assert lake.get_attribute("data-embeds") == "1"


def test_a_zoom_survives_the_next_rounds(tab) -> None:
    open_game(tab, "fishery")
    play(tab, 6)
    stock = vega(tab, "stock")
    domain = "e => e.mddView.scale('x').domain()"
    full = stock.evaluate(domain)
    box = stock.bounding_box()
    tab.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    tab.mouse.wheel(0, -400)  # zoom in
    tab.wait_for_function(
        f"([e, w]) => ({domain})(e)[1] - ({domain})(e)[0] < w",
        arg=[stock.element_handle(), full[1] - full[0]],
    )
    zoomed = stock.evaluate(domain)
    play(tab, 2)
    assert stock.evaluate(domain) == zoomed  # the new rounds did not reset the zoom
    rows = stock.evaluate("e => e.mddView.data('mdd_rows0').length")
    assert rows == 9  # rounds 0-8 are in the chart


def test_a_chart_saves_as_svg_and_png(tab, tmp_path: Path) -> None:
    open_game(tab, "fishery")
    play(tab, 2)
    card = tab.locator(".v-card:has([data-chart='stock'])")
    for label, head in (("Save as SVG", b"<svg"), ("Save as PNG", b"\x89PNG")):
        card.locator(".vega-actions, details").first.evaluate("d => d.setAttribute('open', '')")
        with tab.expect_download() as download:
            card.get_by_text(label).click()
        path = tmp_path / download.value.suggested_filename
        download.value.save_as(path)
        assert path.read_bytes().startswith(head), label


#: the drawn marks of a Vega view, counted: {"rule": n, "symbol:diamond": n, ...}
MARKS = """e => {
  const counts = {};
  const walk = (node) => {
    if (!node) return;
    if (node.marktype && node.items) {
      for (const item of node.items) {
        if (node.marktype === 'group') { walk(item); continue; }
        const key = node.marktype + (item.shape ? ':' + item.shape : '');
        counts[key] = (counts[key] || 0) + 1;
      }
      return;
    }
    for (const child of node.items || []) walk(child);
  };
  walk(e.mddView.scenegraph().root);
  return counts;
}"""


def test_the_port_of_mars_seats_draw_the_leader_and_this_rounds_trades(tab) -> None:
    open_game(tab, "port_of_mars")
    choose(tab, "leadership", "announce")
    reset(tab)
    seats = tab.locator("[data-view='port-of-mars-seats']")
    trades = 0
    for _ in range(10):  # play until a round has accepted trades (seed 42: round 6)
        step(tab)
        caption = seats.locator(".mdd-caption").inner_text()
        trades = int(caption.split("trades this round:")[1].split()[0])
        if trades:
            break
    assert trades > 0, "no round with an accepted trade"
    tab.wait_for_function(ALL_DRAWN)
    marks = seats.locator(".mdd-vega").evaluate(MARKS)
    assert marks.get("symbol:diamond") == 1  # the leader
    assert marks.get("symbol:circle") == 4 + 2  # the other seats; the port disc and its rim
    assert marks.get("rule") == trades and marks.get("symbol:triangle-up") == trades  # arrows
