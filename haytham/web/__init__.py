"""The review pages in the browser: ``haytham serve`` (a local web application) and
``haytham report`` (one self-contained HTML file), sharing their templates.

A feature on the store's public API, like ``haytham.compare``: every state a page shows is
the lifecycle's (``CheckpointManager.state``), and every write (a review, a fork, a re-run)
goes through the manager's methods, under its locks. It needs the ``web`` extra
(``pip install 'haytham[web]'``: Starlette, Jinja2, uvicorn); the core never imports it.

- ``pages``: what each page shows, gathered from the store (no HTML, no web framework);
- ``actions``: what a form does (a review saved only over the version it was read from);
- ``render``: agent markdown to safe HTML, diffs, and the SVG charts;
- ``templating``: the Jinja2 templates and the stylesheet, shared by the app and the report;
- ``security``: the access token, CSRF tokens and the headers every page is sent with;
- ``app``: the Starlette application of ``haytham serve``;
- ``report``: the HTML file of ``haytham report``.
"""

from __future__ import annotations

EXTRA_HINT = "pip install 'haytham[web]'"
"""How to install what the pages need, as the command line tells a person who lacks it."""
