"""Solara's front-end files, for machines that cannot reach its CDN (CI, air-gapped labs).

A Solara page loads its JavaScript and CSS (the Vuetify app, RequireJS, Font
Awesome) through the server's CDN proxy, which fetches them from jsdelivr on
first use and keeps them in a cache directory.  Without internet access every
page stays blank.  The same files are npm packages, so this module fills the
proxy's cache from the npm registry (``npm pack``, the ordinary client) before
the server starts; the proxy then serves them and never goes online.

    python -m mesa_dilemmas.viz.dashboard.assets          # install what is missing
    python -m mesa_dilemmas.viz.dashboard.assets --check  # exit 1 if something is missing

Which packages: read off the installed Solara (its page template, and the
widgets the pages use: the draggable grid of Mesa's component area and the
Vega-Lite chart of Altair components), so a Solara upgrade that pins new
versions asks for those.  A version range in a widget's address (``vega@5``) is
kept as the cache's directory name and filled with the newest matching release.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

#: used when the template cannot be read (the versions Solara 1.64 pins)
FALLBACK = {
    "vue3": "@widgetti/solara-vuetify3-app@5.2.0",
    "vue2": "@widgetti/solara-vuetify-app@10.1.1",
    "requirejs": "requirejs@2.3.6",
    "fontawesome": "font-awesome@4.5.0",
}
_PKG = re.compile(r"\{\{cdn\}\}/((?:@[\w.-]+/)?[\w.-]+@\d+\.\d+\.\d+[\w.+-]*)/")
#: Solara widgets the pages load (Mesa's component grid; Altair charts) and what they fetch
WIDGETS = ("gridlayout.vue", "vegalite.vue")
#: used when a widget cannot be read (what Solara 1.64 loads)
WIDGET_FALLBACK = (
    "@widgetti/vue-grid-layout@2.3.13-alpha.2",
    "vega@5",
    "vega-lite@5",
    "vega-embed@6",
)
_WIDGET_PKG = re.compile(r"getCdn\(\)\}/((?:@[\w.-]+/)?[\w.-]+@\d[\w.+-]*)/")


def vue3() -> bool:
    """Solara serves its Vue 3 front end when ipyvue 3 is installed."""
    import ipyvue

    return str(ipyvue.__version__).startswith("3")


def required_packages() -> list[str]:
    """``name@version`` of every npm package a dashboard page loads through the CDN proxy."""
    import solara.server.settings as server_settings

    template = Path(server_settings.__file__).parent / "templates" / "solara.html.j2"
    try:
        found = list(dict.fromkeys(_PKG.findall(template.read_text())))
    except OSError:
        found = []
    app = "solara-vuetify3-app@" if vue3() else "solara-vuetify-app@"
    apps = [p for p in found if "/solara-vuetify" in p and p.split("/")[-1].startswith(app)]
    others = [p for p in found if "/solara-vuetify" not in p]
    if not apps:
        apps = [FALLBACK["vue3" if vue3() else "vue2"]]
    if not any(p.startswith("requirejs@") for p in others):
        others.append(FALLBACK["requirejs"])
    fontawesome = server_settings.assets.fontawesome_path.strip("/").split("/")[0]
    others.append(fontawesome or FALLBACK["fontawesome"])
    return list(dict.fromkeys([*apps, *others, *widget_packages()]))


def widget_packages() -> list[str]:
    """What the Solara widgets of :data:`WIDGETS` and this package's chart widget
    (:mod:`.vega_widget`) load through the CDN proxy."""
    import solara.widgets

    from mesa_dilemmas.viz.dashboard.vega_widget import PACKAGES

    folder = Path(solara.widgets.__file__).parent / "vue"
    found: list[str] = []
    try:
        for name in WIDGETS:
            found += _WIDGET_PKG.findall((folder / name).read_text())
    except OSError:
        found = list(WIDGET_FALLBACK)
    return list(dict.fromkeys([*(found or WIDGET_FALLBACK), *PACKAGES.values()]))


def cache_dir() -> Path:
    """The proxy's cache (``SOLARA_ASSETS_PROXY_CACHE_DIR``, default ``<prefix>/share/solara/cdn``)."""
    import solara.server.settings as server_settings

    return Path(server_settings.assets.proxy_cache_dir)


def missing(directory: Path | None = None) -> list[str]:
    """The required packages not yet in the cache (a package counts when its directory has files)."""
    directory = directory or cache_dir()
    return [p for p in required_packages() if not any((directory / p).glob("*"))]


def install(directory: Path | None = None, npm: str = "npm", quiet: bool = False) -> list[str]:
    """``npm pack`` every missing package and unpack it into the cache; returns what was installed."""
    directory = directory or cache_dir()
    todo = missing(directory)
    if not todo:
        return []
    exe = shutil.which(npm)
    if exe is None:
        raise RuntimeError(
            f"the dashboard's front-end files are missing ({', '.join(todo)}) and npm is not "
            "installed to fetch them (Debian: apt-get install -y npm)"
        )
    with tempfile.TemporaryDirectory(prefix="mdd-assets-") as tmp:
        for spec in todo:
            if not quiet:
                print(f"fetching {spec} from the npm registry", file=sys.stderr)
            out = subprocess.run(
                [exe, "pack", spec, "--silent", "--pack-destination", tmp],
                capture_output=True,
                text=True,
                check=False,
                timeout=600,
            )
            if out.returncode != 0:
                raise RuntimeError(f"npm pack {spec} failed: {out.stderr.strip()[-500:]}")
            tarball = Path(tmp) / out.stdout.strip().splitlines()[-1]
            target = directory / spec
            staging = Path(tmp) / "unpacked"
            shutil.rmtree(staging, ignore_errors=True)
            with tarfile.open(tarball) as tar:
                tar.extractall(staging, filter="data")
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.rmtree(target, ignore_errors=True)
            shutil.move(str(staging / "package"), target)  # npm tarballs hold package/...
    return todo


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check", action="store_true", help="only report; exit 1 if files are missing"
    )
    parser.add_argument("--dir", type=Path, help="cache directory (default: Solara's proxy cache)")
    args = parser.parse_args(argv)
    directory = args.dir or cache_dir()
    if args.check:
        todo = missing(directory)
        for spec in todo:
            print(f"missing: {spec}")
        return 1 if todo else 0
    done = install(directory)
    print(
        f"{len(done)} package(s) installed in {directory}"
        if done
        else f"all present in {directory}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
