"""The retry loop the API embedders share: backoff, the gate their concurrent requests pass, and failures.

A provider's embedder (:class:`~coverage_core.embeddings.base.RemoteEmbedder`)
translates its client's exceptions into :class:`Failure` values;
:func:`call_with_retries` decides from them whether to wait and try again or
to give up with one :class:`~coverage_core.errors.ProviderError`.
"""

from __future__ import annotations

import math
import random
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator, TypeVar

from coverage_core.errors import ProviderError

T = TypeVar("T")


@dataclass(frozen=True)
class Backoff:
    """Exponential backoff between retries.

    Delay before retry ``attempt`` (0-based) is ``initial * 2**attempt`` with
    up to 25% jitter, capped at ``maximum``. A server's ``Retry-After`` value
    is used instead when given (also capped, so a bad header cannot stall a
    run for minutes). Tests pass a tiny ``initial`` to stay fast.
    """

    initial: float = 1.0
    maximum: float = 30.0
    jitter: float = 0.25

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        if retry_after is not None and retry_after >= 0:
            return min(float(retry_after), self.maximum)
        base = self.initial * (2**attempt)
        return min(base * (1.0 + self.jitter * random.random()), self.maximum)


class RequestGate:
    """What the concurrent requests of one embedder share: a cap on requests in
    flight and a common pause after a rate limit.

    A 429 pauses *every* request of the embedder until the wait it asked for
    (``Retry-After``, or the backoff) is over, not only the one that got it,
    and halves the cap; each run of ``limit`` successes raises the cap by one
    again, up to ``max_concurrency`` (additive increase, multiplicative
    decrease). N requests in flight therefore back off together instead of
    hammering the limit from N independent retry loops.

    Attributes:
        max_concurrency: The cap when nothing is rate limited.
        limit: The cap now.
        peak_in_flight: The most requests that were in flight at once.
    """

    def __init__(self, max_concurrency: int, clock: Callable[[], float] = time.monotonic):
        self.max_concurrency = max(1, int(max_concurrency))
        self.limit = self.max_concurrency
        self.peak_in_flight = 0
        self._clock = clock
        self._condition = threading.Condition()
        self._in_flight = 0
        self._resume_at = -math.inf
        self._successes = 0
        self._epoch = 0  # rate limits so far; tickets of older requests do not raise the cap

    def __repr__(self) -> str:
        return f"RequestGate(max_concurrency={self.max_concurrency}, limit={self.limit})"

    def wait_out_pause(self, sleep: Callable[[float], None], served: float = -math.inf) -> float:
        """Sleep (with ``sleep``) until the shared pause is over; return at once when there is none.

        Returns the end of the pause slept, to pass back as ``served``: a pause
        is slept once even when ``sleep`` returns early (tests pass a fake),
        and again only if a new rate limit extended it meanwhile.
        """
        while True:
            with self._condition:
                resume_at = self._resume_at
            remaining = resume_at - self._clock()
            if resume_at <= served or remaining <= 0:
                return served
            sleep(remaining)
            served = resume_at

    @contextmanager
    def slot(self, sleep: Callable[[float], None]) -> Iterator[int]:
        """Hold one of the ``limit`` request slots, after the shared pause; yields a ticket for :meth:`succeeded`."""
        served = self.wait_out_pause(sleep)
        with self._condition:
            while self._in_flight >= self.limit:
                self._condition.wait()
            self._in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self._in_flight)
        try:
            # A rate limit may have come while this request waited for its slot.
            self.wait_out_pause(sleep, served)
            with self._condition:
                ticket = self._epoch
            yield ticket
        finally:
            with self._condition:
                self._in_flight -= 1
                self._condition.notify_all()

    def rate_limited(self, delay: float) -> None:
        """A request was rate limited: pause everyone for ``delay`` seconds and halve the cap."""
        with self._condition:
            self._resume_at = max(self._resume_at, self._clock() + max(0.0, float(delay)))
            self.limit = max(1, self.limit // 2)
            self._successes = 0
            self._epoch += 1

    def succeeded(self, ticket: int) -> None:
        """A request holding ``ticket`` succeeded: after ``limit`` successes in a row, allow one more in flight.

        Requests sent before the last rate limit do not count: their success
        says nothing about the rate the provider accepts now.
        """
        with self._condition:
            if ticket != self._epoch:
                return
            self._successes += 1
            if self._successes >= self.limit and self.limit < self.max_concurrency:
                self.limit += 1
                self._successes = 0
                self._condition.notify_all()


@dataclass(frozen=True)
class Failure:
    """A provider exception translated for the retry loop and for users."""

    kind: str
    message: str
    retryable: bool
    retry_after: float | None = None


def parse_retry_after(value: object) -> float | None:
    """Seconds from a ``Retry-After`` header value, or None if absent/unparseable."""
    if value is None:
        return None
    try:
        seconds = float(str(value).strip())
    except ValueError:
        return None  # an HTTP date; rare for these APIs, fall back to backoff
    return seconds if seconds >= 0 else None


def call_with_retries(
    request: Callable[[], T],
    classify: Callable[[Exception], Failure | None],
    *,
    max_retries: int,
    backoff: Backoff,
    sleep: Callable[[float], None] = time.sleep,
    gate: RequestGate | None = None,
) -> T:
    """Run ``request``; retry retryable failures up to ``max_retries`` times.

    ``classify`` maps a provider exception to a :class:`Failure`, or returns
    None for exceptions it does not know (those propagate unchanged).
    Non-retryable failures (auth, bad request) raise at once so a wrong key
    never causes a storm of requests. The original exception is not chained:
    provider exceptions carry the HTTP request, whose headers hold the key.

    With a ``gate``, each attempt holds one of its slots, and a rate limit's
    wait is the gate's shared pause (every request sharing the gate waits it
    out) instead of a sleep of this request alone.
    """
    attempt = 0
    while True:
        try:
            if gate is None:
                return request()
            with gate.slot(sleep) as ticket:
                result = request()
            gate.succeeded(ticket)
            return result
        except Exception as exc:  # noqa: BLE001 - narrowed by classify below
            failure = classify(exc)
            if failure is None:
                raise
        if not failure.retryable or attempt >= max_retries:
            if failure.retryable and attempt > 0:
                message = f"{failure.message} (gave up after {attempt + 1} attempts)"
            else:
                message = failure.message
            raise ProviderError(message, failure.kind) from None
        delay = backoff.delay(attempt, failure.retry_after)
        if gate is not None and failure.kind == "rate_limit":
            gate.rate_limited(delay)  # the next attempt's slot() sleeps it out, as does every other request's
        else:
            sleep(delay)
        attempt += 1
