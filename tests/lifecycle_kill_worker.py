"""A writer of the small workflow's session that SIGKILLs itself before its Nth file-system
change (``fault_worker.install``): the lifecycle machine's kill at any step of a transaction.

``python lifecycle_kill_worker.py BASE SESSION OPERATION KILL_AT`` runs OPERATION (``run``,
``approve`` or ``send_back`` of the first phase awaiting review, ``rerun`` from phase 1) and
exits 0 when it finished before the kill point; otherwise the kernel ends it with SIGKILL.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fault_worker import install
from small_workflow import PROJECT, Agents, manager_for, runner_for


def main(base: str, session: str, operation: str, kill_at: int) -> None:
    manager = manager_for(Path(base))
    runner = runner_for(manager, Agents())
    install(kill_at, [0])
    if operation == "run":
        runner.run(PROJECT, session)
    elif operation == "rerun":
        runner.rerun(PROJECT, session, 1)
    else:
        view = manager.state(PROJECT, session)
        waiting = view.awaiting_review
        if not waiting:
            return
        approve = operation == "approve"
        manager.save_user_feedback(
            PROJECT,
            session,
            waiting[0].number,
            reviewed=True,
            approved=approve,
            comments="" if approve else "again, after a kill",
            action="approved" if approve else "retry",
        )


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]))
