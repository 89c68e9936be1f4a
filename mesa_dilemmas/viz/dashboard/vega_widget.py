"""The widget that draws the dashboard's Vega-Lite charts, updating them in place.

Solara's ``VegaLite`` widget embeds a chart anew for every change of its spec (after a
100 ms debounce): every round re-parsed, re-compiled and re-drew every chart, and a zoom
was lost each round.  :class:`VegaChart` draws the first spec with vega-embed and keeps
the Vega view; when a later spec differs from the drawn one only in its rows (the
``data.values`` of the spec and of its layers: a new round's points, the agents' new
state), it hands the view the tables that changed (``view.data(...)``) and lets Vega
re-run its dataflow -- scales, axes and marks follow, a zoom or pan stays where the user
put it.  Any other change (a new layer, a reference
line, the page's theme switched) embeds the chart anew: in Vuetify's dark theme the chart
uses Vega's dark theme (light text, axes, grid) on a transparent background, so the
card's colour shows through.  Draws never overlap: a change that
arrives during a draw is drawn right after it, the newest spec only.

The drawn element says what it shows, for the benchmark and the browser tests:
``data-drawn`` is the ``usermeta.token`` of the spec last drawn (the dashboard's
snapshot token), ``data-embeds`` and ``data-updates`` count full embeds and in-place
updates.  The chart's ``...`` menu saves it as SVG or PNG (vega-embed's export
actions; its links to the online editor are switched off).

A copy that Vuetify has unmounted marks itself gone and never draws (a Reset or a theme
switch re-mounts the charts while a redraw may be pending).
"""

from __future__ import annotations

import os

import ipyvuetify
import traitlets

from mesa_dilemmas.viz.dashboard.vega import HALO

#: the npm packages the widget loads through Solara's CDN proxy (the asset prefetch fetches
#: them: :func:`mesa_dilemmas.viz.dashboard.assets.widget_packages`)
PACKAGES = {"vega": "vega@5", "vega-lite": "vega-lite@5", "vega-embed": "vega-embed@6"}
REQUIREJS = "requirejs@2.3.6"
#: the names inline tables get in the compiled Vega spec (``mdd_rows0``, ...), so they can be replaced
ROWS = "mdd_rows"
#: the background of a card in Vuetify's dark theme (a label's halo takes it there)
DARK_CARD = "#1e1e1e"

TEMPLATE = (
    """
<template>
  <div><div ref="plotElement" class="mdd-vega"></div></div>
</template>
<script>
// dark theme: a text mark drawn in a fixed dark colour (or in none: Vega's dark theme leaves
// text marks black) is drawn light instead, hue kept where it has one; so the agent views'
// labels (the lake's stock, the villagers' numbers, the seats' points and holdings) read on the
// dark card; a text mark with its own ``fill`` sits on a mark of its own and is left as it is
function luminance(hex) {
  const m = /^#?([0-9a-f]{6})$/i.exec(String(hex || "").trim());
  if (!m) return null;
  const c = [0, 2, 4].map((i) => parseInt(m[1].slice(i, i + 2), 16) / 255)
    .map((v) => (v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4)));
  return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2];
}
function lightText(hex) {
  const m = /^#?([0-9a-f]{6})$/i.exec(String(hex || "").trim());
  if (!m) return "#e6e6e6";
  // the same hue, mixed 75 % toward white
  const c = [0, 2, 4].map((i) => parseInt(m[1].slice(i, i + 2), 16));
  return "#" + c.map((v) => Math.round(v + (255 - v) * 0.75).toString(16).padStart(2, "0")).join("");
}
function lighten(node) {
  if (!node || typeof node !== "object") return;
  const mark = node.mark;
  if (mark && (mark === "text" || mark.type === "text")) {
    const spec = typeof mark === "string" ? { type: "text" } : mark;
    const enc = node.encoding || {};
    // a label's halo (``vega.HALO``, drawn under a reference line's label) takes the dark
    // card's colour
    if (spec.fill === "@HALO@" && spec.stroke === "@HALO@") spec.fill = spec.stroke = "@DARK_CARD@";
    // a text mark with its own ``fill`` is drawn on a mark of its own (a seat's disc): kept
    else if (!enc.color && !enc.fill && spec.fill === undefined) {
      const given = spec.color;
      const lum = luminance(given);
      if (given === undefined || (lum !== null && lum < 0.4)) spec.color = lightText(given);
    }
    node.mark = spec;
  }
  for (const part of ["layer", "concat", "hconcat", "vconcat"]) (node[part] || []).forEach(lighten);
}
module.exports = {
  mounted() { this.draw(); },
  destroyed() {
    this.gone = true;
    if (this.observer) this.observer.disconnect();
    if (this.view) this.view.finalize();
  },
  computed: { dark() { return Boolean(this.$vuetify && this.$vuetify.theme.dark); } },
  watch: { spec() { this.draw(); }, dark() { this.draw(); } },
  methods: {
    async draw() {
      if (this.drawing) { this.again = true; return; }
      this.drawing = true;
      try {
        do { this.again = false; await this.drawOnce(); } while (this.again && !this.gone);
      } finally { this.drawing = false; }
    },
    async drawOnce() {
      const element = this.$refs.plotElement;
      if (this.gone || !element || !this.spec || !Object.keys(this.spec).length) return;
      const spec = JSON.parse(JSON.stringify(this.spec));
      const meta = spec.usermeta || {};
      // dark: Vega's own dark theme (light text, axes, grid) on the card's background
      if (this.dark) { spec.background = "transparent"; lighten(spec); }
      const token = meta.token === undefined ? "" : String(meta.token);
      // every inline table (the spec's own, each layer's) becomes a named dataset, so that
      // a later spec that differs only in those rows can be drawn by replacing them
      const rows = {};
      const name = (node) => {
        if (!node || typeof node !== "object") return;
        if (node.data && Array.isArray(node.data.values) && !node.data.name) {
          const key = "@ROWS@" + Object.keys(rows).length;
          rows[key] = node.data.values;
          node.data = { name: key };
        }
        for (const part of ["layer", "concat", "hconcat", "vconcat"]) (node[part] || []).forEach(name);
      };
      name(spec);
      spec.datasets = { ...(spec.datasets || {}), ...rows };
      const shape = JSON.stringify({ ...spec, datasets: Object.keys(spec.datasets), usermeta: { ...meta, token: null }, dark: this.dark });
      const embed = await this.libraries();
      if (this.gone || !this.$refs.plotElement) return;
      try {
        if (this.in_place && this.view && shape === this.shape) {
          const texts = {};
          for (const key of Object.keys(rows)) {
            texts[key] = JSON.stringify(rows[key]);
            if (texts[key] !== this.texts[key]) this.view.data(key, rows[key]);
          }
          this.texts = texts;
          // resize(): the layout is computed anew for the new rows (wider axis labels, a
          // title moved down); without it the first draw's layout stays and cuts them off
          await this.view.resize().runAsync();
          element.dataset.updates = String(+(element.dataset.updates || 0) + 1);
        } else {
          if (this.view) this.view.finalize();
          const options = {  // drawn on a canvas (vega-embed's default)
            actions: { export: true, source: false, compiled: false, editor: false },
            ...(meta.embedOptions || {}),
            ...(this.dark ? { theme: "dark" } : {}),
          };
          const result = await embed(element, spec, options);
          if (this.gone) { result.view.finalize(); return; }
          this.view = result.view;
          element.mddView = result.view;  // for the browser tests (the zoom's scale domains)
          this.shape = shape;
          this.texts = Object.fromEntries(Object.keys(rows).map((k) => [k, JSON.stringify(rows[k])]));
          element.dataset.embeds = String(+(element.dataset.embeds || 0) + 1);
          if (spec.width === "container" && !this.observer) {
            this.observer = new ResizeObserver(() => { if (this.view) this.view.resize().runAsync(); });
            this.observer.observe(element);
          }
        }
        element.dataset.drawn = token;
      } catch (error) {
        if (this.gone || !this.$refs.plotElement) return;
        throw error;
      }
    },
    libraries() {
      if (!window.mddVegaLibraries) {
        const cdn = this.cdn || (window.solara && window.solara.cdn) || this.baseUrl() + "_solara/cdn";
        window.mddVegaLibraries = (async () => {
          if (!window.requirejs) {
            await new Promise((resolve, reject) => {
              const script = document.createElement("script");
              script.src = `${cdn}/@REQUIREJS@/require.js`;
              script.onload = resolve;
              script.onerror = reject;
              document.head.appendChild(script);
            });
          }
          window.requirejs.config({ map: { "*": {
            "vega": `${cdn}/@VEGA@/build/vega.min.js`,
            "vega-lite": `${cdn}/@VEGA_LITE@/build/vega-lite.min.js`,
            "vega-embed": `${cdn}/@VEGA_EMBED@/build/vega-embed.min.js`,
          } } });
          return await new Promise((resolve, reject) => {
            window.requirejs(["vega", "vega-lite", "vega-embed"], (vega, vl, embed) => resolve(embed), reject);
          });
        })();
      }
      return window.mddVegaLibraries;
    },
    baseUrl() {
      if (document.getElementsByTagName("base").length) return "./";
      const config = document.getElementById("jupyter-config-data");
      if (config) return JSON.parse(config.textContent).baseUrl;
      const base = document.body.dataset.baseUrl || document.baseURI;
      return base.endsWith("/") ? base : base + "/";
    },
  },
};
</script>
<style>
.mdd-vega.vega-embed { width: 100%; }
</style>
""".replace("@ROWS@", ROWS)
    .replace("@REQUIREJS@", REQUIREJS)
    .replace("@VEGA@", PACKAGES["vega"])
    .replace("@VEGA_LITE@", PACKAGES["vega-lite"])
    .replace("@VEGA_EMBED@", PACKAGES["vega-embed"])
    .replace("@HALO@", HALO)
    .replace("@DARK_CARD@", DARK_CARD)
)


def _in_place_default() -> bool:
    """In-place updates unless ``MESA_DILEMMAS_CHARTS_IN_PLACE=0`` (``benchmarks/bench_dashboard.py``
    sets it to time the same pages with a full embed per round, side by side)."""
    return os.environ.get("MESA_DILEMMAS_CHARTS_IN_PLACE", "1") != "0"


class VegaChart(ipyvuetify.VuetifyTemplate):
    """A Vega-Lite chart that updates in place (see the module's docstring)."""

    template = traitlets.Unicode(TEMPLATE).tag(sync=True)
    spec = traitlets.Dict().tag(sync=True)
    cdn = traitlets.Unicode(None, allow_none=True).tag(sync=True)
    #: update the drawn chart when only its rows change (else embed every spec anew)
    in_place = traitlets.Bool(True).tag(sync=True)

    @traitlets.default("in_place")
    def _in_place(self) -> bool:
        return _in_place_default()

    @traitlets.default("cdn")
    def _cdn(self) -> str | None:
        import solara.settings

        return None if solara.settings.assets.proxy else solara.settings.assets.cdn


def with_token(spec: dict, token: str, filename: str = "") -> dict:
    """The spec with ``usermeta.token`` set (the drawn element reports it as ``data-drawn``)
    and, given a ``filename``, the name the chart's ``...`` menu saves it under (vega-embed's
    ``downloadFileName``; without it every chart downloads as ``visualization.svg``)."""
    if not token and not filename:
        return spec
    meta = dict(spec.get("usermeta", {}))
    if token:
        meta["token"] = token
    if filename:
        meta["embedOptions"] = {**meta.get("embedOptions", {}), "downloadFileName": filename}
    return {**spec, "usermeta": meta}


def download_name(*parts: object) -> str:
    """A file name (without extension) from its parts: ``lake_seed42_stock``; characters a
    file name should not hold become ``-``."""
    import re

    words = [re.sub(r"[^0-9A-Za-z._-]+", "-", str(p)).strip("-") for p in parts if str(p)]
    return "_".join(w for w in words if w) or "chart"
