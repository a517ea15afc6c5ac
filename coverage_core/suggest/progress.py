"""How far the writing of gap suggestions is, for a progress line or bar: gaps done, gaps in all, seconds left.

Writing questions for every gap takes a few seconds per gap with the
bundled model (a minute or more for twenty gaps on a laptop), so
:func:`~coverage_core.suggest.gaps.analyze_gaps` reports each gap a model
wrote for through a callback ``progress(done, total, seconds_left)``:
``done`` of ``total`` gaps are written, and ``seconds_left`` is the time the
gaps still to write should take at the pace so far (None before the first
gap is done). It is called with ``done == 0`` before the first gap and
with ``done == total`` (and 0 seconds left) at the end, also when the
writer stopped early. The CLI prints :func:`progress_sentence` on stderr;
the dashboard can show the same sentence under a progress bar.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from coverage_core.wording import count

__all__ = ["WritingClock", "WritingProgress", "progress_sentence"]

WritingProgress = Callable[[int, int, "float | None"], None]
"""``progress(done, total, seconds_left)``: see the module docstring."""


class WritingClock:
    """Tells a :data:`WritingProgress` callback about ``total`` gaps as they are written."""

    def __init__(self, total: int, progress: WritingProgress | None, clock: Callable[[], float] = time.monotonic):
        self.total = total
        self.done = 0
        self._progress = progress
        self._clock = clock
        self._started = clock()
        if progress is not None and total:
            progress(0, total, None)

    def step(self) -> None:
        """One more gap written."""
        self.done = min(self.done + 1, self.total)
        if self._progress is not None:
            elapsed = self._clock() - self._started
            self._progress(self.done, self.total, elapsed / self.done * (self.total - self.done))

    def finish(self) -> None:
        """Every gap is done, or the writer stopped: the last report (nothing when the last step said so)."""
        if self._progress is not None and self.total and self.done < self.total:
            self.done = self.total
            self._progress(self.total, self.total, 0.0)


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{max(1, round(seconds))} s"
    return f"{round(seconds / 60)} min"


def progress_sentence(done: int, total: int, seconds_left: float | None) -> str:
    """One plain sentence of a :data:`WritingProgress` report: "Writing questions: 3 of 20 gaps done, about 40 s left."."""
    if done >= total:
        return f"Writing questions: {count(total, 'gap')} done."
    left = "" if seconds_left is None else f", about {_duration(seconds_left)} left"
    return f"Writing questions: {done} of {count(total, 'gap')} done{left}."
