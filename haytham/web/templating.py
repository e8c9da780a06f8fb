"""The Jinja2 templates and the stylesheet, shared by ``haytham serve`` and ``haytham report``.

Autoescaping is on for every template: any text from a session file is escaped unless it went
through ``render.markdown_html`` or is a chart of ``render.bar_chart`` (both marked safe
here, and only those).
"""

from __future__ import annotations

from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path
from typing import Any
from urllib.parse import quote

import jinja2
from markupsafe import Markup

from haytham.web.pages import waited
from haytham.web.render import markdown_html

HERE = Path(__file__).resolve().parent
TEMPLATES = HERE / "templates"
STATIC = HERE / "static"


def _markdown(text: str | None) -> Markup:
    return Markup(markdown_html(text or ""))  # escaped by the renderer


def _svg(chart: str) -> Markup:
    return Markup(chart)  # built by render.bar_chart with every label escaped


def _number(value: int | float | None) -> str:
    return "-" if value is None else f"{value:,}"


def _cost(value: float | None) -> str:
    return "-" if value is None else f"${value:.4f}"


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f} s"


def _url_part(name: str) -> str:
    """One path segment of a URL (a project or session name) with every special character quoted."""
    return quote(name, safe="")


def _words(state: str) -> str:
    return state.replace("_", " ")


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    """The one Jinja2 environment (autoescaping, the filters the templates use)."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        markdown=_markdown, svg=_svg, u=_url_part, number=_number, cost=_cost, seconds=_seconds, words=_words
    )
    return env


def render(template: str, **context: Any) -> str:
    """``template`` rendered with ``context``, plus ``now`` and ``waited`` for every page."""
    now = datetime.now(timezone.utc)
    return environment().get_template(template).render(now=now, waited=lambda s: waited(s, now), **context)


def stylesheet() -> str:
    """The stylesheet the served pages link to and the report holds inline."""
    return (STATIC / "style.css").read_text(encoding="utf-8")
