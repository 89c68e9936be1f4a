"""The app bar's theme button: Solara's ``ThemeToggle`` with an accessible name.

Solara's button is an icon alone (a screen reader announces "button"); this one carries
``aria-label`` and ``title`` saying which theme is on ("colour theme: dark (click to
switch)").  Same behaviour otherwise: dark, light, as the system, in turn."""

from __future__ import annotations

from collections.abc import Callable

import solara
from solara.lab import theme


@solara.component_vue("theme_toggle.vue")
def _ThemeToggle(  # noqa: N802 - a component
    theme_dark: str,
    event_sync_themes: Callable[[str], None],
    enable_auto: bool,
    on_icon: str,
    off_icon: str,
    auto_icon: str,
    clicks: int = 1,
) -> None:
    pass


@solara.component
def ThemeToggle() -> solara.Element:  # noqa: N802 - a component
    def sync_themes(selected_theme: str) -> None:
        theme.dark = selected_theme

    return _ThemeToggle(
        theme_dark=theme.dark,
        event_sync_themes=sync_themes,
        enable_auto=True,
        on_icon="mdi-weather-night",
        off_icon="mdi-weather-sunny",
        auto_icon="mdi-brightness-auto",
    )
