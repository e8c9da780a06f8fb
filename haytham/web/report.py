"""``haytham report``: a session as one self-contained HTML file, to attach to a pull request
or an e-mail.

It holds the timeline, every phase's outputs rendered, the reviews and their comments, the
earlier attempts with their diffs, and the costs, drawn with the same templates as the pages
of ``haytham serve``. The stylesheet, the charts and the pages' one script (which shows each
time in the reader's local time) are inline, and a Content-Security-Policy in the file itself
forbids loading anything and allows no script but that one (by its hash), so it renders the
same offline and cannot run or fetch what an agent wrote.
"""

from __future__ import annotations

from markupsafe import Markup

from haytham.errors import Issue
from haytham.store.manager import CheckpointManager
from haytham.web import pages
from haytham.web.templating import render, script, script_hash, stylesheet


def report_html(
    manager: CheckpointManager, project: str, session: str, *, problems: list[Issue] | None = None
) -> str:
    """The report of ``project/session`` as the text of one HTML file.

    A file that does not read (a review file, an agent output) is a mistake shown at the top
    (file, line, message), with everything that reads below it; ``problems``, when given,
    gets those mistakes too, for the command line to say them."""
    page = pages.session_page(manager, project, session)
    checkpoints = {line.view.number: line.checkpoint for line in page.phases if line.checkpoint is not None}
    phases = [  # from the session page's one reading of the session: linear in the phases
        pages.phase_page(manager, project, session, n, state=page.state, checkpoints=checkpoints)
        for n in (line.view.number for line in page.phases)
    ]
    found = list(page.problems)  # a review that does not read, then an output that does not
    found += [issue for phase in phases for issue in phase.problems if issue not in found]
    if problems is not None:
        problems.extend(found)
    css = Markup(stylesheet())  # the package's own stylesheet, inlined as it is
    js = script()
    return render(
        "report.html",
        standalone=True,
        css=css,
        js=Markup(js),
        js_hash=Markup(script_hash(js)),
        page=page,
        phases=phases,
        problems=found,
    )
