"""Agent output as HTML a browser can show safely, diffs between attempts, and SVG charts.

An agent's output is untrusted text from a language model: it is rendered with mistune with
every raw HTML block and tag escaped (shown as text) but HTML comments left out (no markdown
viewer shows them; haytham's own files end with machine notes in them, such as the
checkpoint a LangGraph interrupt paused at), every link whose URL is not http(s),
mailto or a page anchor reduced to its text (``javascript:`` and ``data:`` never become an
``href``), and every image shown as its description and address instead of being fetched,
so that neither the served pages nor the offline report load anything from the network.
Charts are drawn here as inline SVG, with attributes only (no ``style=``), so a
Content-Security-Policy without ``'unsafe-inline'`` allows them.
"""

from __future__ import annotations

import difflib
import html
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import mistune
from mistune.renderers.html import HTMLRenderer

_LINK_PROTOCOLS = ("http://", "https://", "mailto:")


class _SafeRenderer(HTMLRenderer):
    """mistune's HTML renderer with raw HTML escaped and only harmless links kept."""

    def __init__(self) -> None:
        super().__init__(escape=True)

    @staticmethod
    def _allowed(url: str) -> bool:
        plain = "".join(url.split()).lower()
        return plain.startswith(_LINK_PROTOCOLS) or plain.startswith("#")

    @staticmethod
    def _comment(raw: str) -> bool:
        text = raw.strip()
        return text.startswith("<!--") and text.endswith("-->") and text.count("-->") == 1

    def block_html(self, html: str) -> str:
        return "" if self._comment(html) else super().block_html(html)

    def inline_html(self, html: str) -> str:
        return "" if self._comment(html) else super().inline_html(html)

    def link(self, text: str, url: str, title: str | None = None) -> str:
        if not self._allowed(url):
            return text  # the link is removed, its words stay
        attrs: dict[str, object] = {"href": url, "rel": "noopener noreferrer nofollow"}
        if title:
            attrs["title"] = title
        return "<a" + self.render_attrs(attrs) + ">" + text + "</a>"

    def image(self, text: str, url: str, title: str | None = None) -> str:
        shown = html.escape(f"[image: {text}]" + (f" {url}" if self._allowed(url) else ""))
        return f'<span class="image-ref">{shown}</span>'


_MARKDOWN = mistune.create_markdown(renderer=_SafeRenderer(), plugins=["table", "strikethrough"])


def markdown_html(text: str) -> str:
    """``text`` (markdown from an agent or a reviewer) as HTML that runs nothing and loads nothing."""
    rendered: Any = _MARKDOWN(text)
    return str(rendered)


@dataclass(frozen=True)
class DiffLine:
    """One line of a unified diff: ``kind`` is ``add``, ``del``, ``hunk``, ``file`` or ``same``."""

    kind: str
    text: str


def unified_diff(before: str, after: str, before_name: str, after_name: str) -> list[DiffLine]:
    """The unified diff from ``before`` to ``after`` (empty when they are equal)."""
    lines = difflib.unified_diff(
        before.splitlines(), after.splitlines(), before_name, after_name, lineterm="", n=2
    )
    found = []
    for line in lines:
        if line.startswith(("---", "+++")):
            kind = "file"
        elif line.startswith("@@"):
            kind = "hunk"
        elif line.startswith("+"):
            kind = "add"
        elif line.startswith("-"):
            kind = "del"
        else:
            kind = "same"
        found.append(DiffLine(kind, line))
    return found


@dataclass(frozen=True)
class Bar:
    """One bar of a chart: its label, its value, and the value as the chart writes it."""

    label: str
    value: float
    shown: str


_ROW = 22
_LABEL_WIDTH = 210
_BAR_WIDTH = 300
_WIDTH = _LABEL_WIDTH + _BAR_WIDTH + 110


def bar_chart(title: str, bars: Sequence[Bar]) -> str:
    """A horizontal bar chart as an inline ``<svg>`` element (labels escaped)."""
    height = _ROW * (len(bars) + 1) + 6
    top = max((bar.value for bar in bars), default=0.0) or 1.0
    parts = [
        f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" width="{_WIDTH}" height="{height}" '
        f'viewBox="0 0 {_WIDTH} {height}" role="img" aria-label="{html.escape(title)}">',
        f'<text x="0" y="15" font-size="13" font-weight="bold" fill="#222">{html.escape(title)}</text>',
    ]
    for index, bar in enumerate(bars):
        y = _ROW * (index + 1) + 4
        width = max(1.0, _BAR_WIDTH * max(bar.value, 0.0) / top) if bar.value > 0 else 0.0
        label = bar.label if len(bar.label) <= 30 else bar.label[:29] + "…"
        parts += [
            f'<text x="0" y="{y + 13}" font-size="12" fill="#333">{html.escape(label)}</text>',
            f'<rect x="{_LABEL_WIDTH}" y="{y + 2}" width="{width:.1f}" height="14" fill="#4a78b5" rx="2"/>',
            f'<text x="{_LABEL_WIDTH + width + 6:.1f}" y="{y + 13}" font-size="12" fill="#333">'
            f"{html.escape(bar.shown)}</text>",
        ]
    parts.append("</svg>")
    return "".join(parts)
