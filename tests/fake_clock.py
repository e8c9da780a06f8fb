"""A clock for the runner's retry loop that moves only when it is told to wait: every wait
is counted, none is slept (``haytham.run.retry.RunClock``)."""

from __future__ import annotations

import threading
from datetime import datetime, timedelta, timezone

START = datetime(2026, 12, 5, 6, 0, 0, tzinfo=timezone.utc)


class FakeClock:
    """Time that moves only when the runner waits: every wait is counted, none is slept."""

    def __init__(self) -> None:
        self.moment = START
        self.waits: list[float] = []
        self.lock = threading.Lock()

    def now(self) -> datetime:
        return self.moment

    def monotonic(self) -> float:
        return self.moment.timestamp()

    def sleep(self, seconds: float) -> None:
        with self.lock:
            self.waits.append(seconds)
            self.moment += timedelta(seconds=seconds)
