"""The Jinja2 templates and the stylesheet, shared by ``haytham serve`` and ``haytham report``.

Autoescaping is on for every template: any text from a session file is escaped unless it went
through ``render.markdown_html`` or is a chart of ``render.bar_chart`` (both marked safe
here, and only those).
"""

from __future__ import annotations

import base64
import hashlib
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path
from typing import Any
from urllib.parse import quote

import jinja2
from markupsafe import Markup, escape

from haytham.records import AgentOutput
from haytham.store.clock import parse_timestamp
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


def _when(value: str | datetime | None) -> Markup | str:
    """A time as ``<time datetime="ISO" title="ISO">YYYY-MM-DD HH:MM:SS UTC</time>``: to the
    second in UTC (what a page without script, or the report printed, shows), the ISO value
    on hover, and ``static/app.js`` rewrites the text to the reader's local time. ``-`` for no
    time; a value that is not a time is shown as it is (escaped)."""
    if value is None or value == "":
        return "-"
    if isinstance(value, str):
        return _when_text(value)
    return _time_element(value.isoformat().replace("+00:00", "Z"), value)


@lru_cache(maxsize=4096)
def _when_text(value: str) -> Markup | str:
    """``_when`` of a time as a file writes it, remembered: a listing page shows the same
    rows' times on every load (bounded, so a long-running server's memory stays flat)."""
    try:
        moment = parse_timestamp(value)
    except ValueError:
        return value
    return _time_element(value, moment)


def _time_element(iso: str, moment: datetime) -> Markup:
    shown = moment.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    quoted = escape(iso)
    return Markup(f'<time datetime="{quoted}" title="{quoted}">{shown}</time>')


def _output_meta(output: AgentOutput) -> str:
    """An output's metadata as one line, each fact it has and none it lacks: ``completed ·
    model gpt-x · 10 in / 20 out tokens · $0.0100 · 1.5 s``."""
    parts = [_words(output.status)]
    if output.model:
        parts.append(f"model {output.model}")
    if output.input_tokens is not None or output.output_tokens is not None:
        parts.append(f"{_number(output.input_tokens)} in / {_number(output.output_tokens)} out tokens")
    if output.cost is not None:
        parts.append(_cost(output.cost))
    if output.duration is not None:
        parts.append(_seconds(output.duration))
    if output.tools_used:
        parts.append("tools: " + ", ".join(output.tools_used))
    return " · ".join(parts)


def _code_in(message: str, *codes: str | None) -> Markup:
    """``message`` escaped, with the first of each of ``codes`` in it shown as ``<code>``
    (the command to type, the Python that resumes a graph or flow)."""
    found = sorted((message.find(code), code) for code in codes if code and code in message)
    shown, done = Markup(""), 0
    for start, code in found:
        if start < done:
            continue  # inside a code shown already
        shown += Markup("{0}<code>{1}</code>").format(message[done:start], code)
        done = start + len(code)
    return shown + Markup("{0}").format(message[done:])


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
        markdown=_markdown,
        svg=_svg,
        u=_url_part,
        number=_number,
        cost=_cost,
        seconds=_seconds,
        words=_words,
        when=_when,
        output_meta=_output_meta,
        code_in=_code_in,
    )
    return env


def render(template: str, **context: Any) -> str:
    """``template`` rendered with ``context``, plus ``now`` and ``waited`` for every page."""
    now = datetime.now(timezone.utc)
    return environment().get_template(template).render(now=now, waited=lambda s: waited(s, now), **context)


def stylesheet() -> str:
    """The stylesheet the served pages link to and the report holds inline."""
    return (STATIC / "style.css").read_text(encoding="utf-8")


def script() -> str:
    """The script the served pages link to and the report holds inline (allowed there by its
    hash, ``script_hash``): it shows every ``<time>`` in the reader's local time."""
    return (STATIC / "app.js").read_text(encoding="utf-8")


def script_hash(text: str) -> str:
    """The Content-Security-Policy source that allows exactly the inline script ``text``."""
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"
