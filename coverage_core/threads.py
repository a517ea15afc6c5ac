"""Work spread over the CPUs: numpy and BLAS release the GIL, so plain threads share the cores.

:func:`in_threads` maps a function over lazily read items; :func:`in_order`
makes items in threads and hands each one on in order, for a pass whose
running state must see the items one at a time (the blockwise similarity
scan). The thread counts, and why BLAS runs single-threaded inside these
threads, are measured in ``docs/benchmarks.md``.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections import deque
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from threadpoolctl import threadpool_limits

__all__ = ["MAX_THREADS", "in_order", "in_threads", "worker_threads", "workers_for"]

# At most this many threads, so that the blocks under way (up to 4 MB of
# products or 50 MB of word arrays each in the screener, 32 MB per block of
# the similarity scan) stay a small part of the memory whatever the machine reports.
MAX_THREADS = 8


def worker_threads() -> int:
    """Threads for :func:`in_threads` and :func:`in_order`: the CPUs this process may use, at most ``MAX_THREADS``."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, MAX_THREADS))


def workers_for(n_items: int) -> int:
    """Threads worth starting for ``n_items`` items: :func:`worker_threads`, at most ``n_items``, at least 1."""
    return max(1, min(worker_threads(), n_items))


def _one_blas_thread(workers: int):
    """A context in which BLAS runs one thread per call when ``workers`` > 1 threads multiply at once:
    OpenBLAS's own threads spin while the caller's thread does other work. Nothing changes for 1."""
    return threadpool_limits(limits=1, user_api="blas") if workers > 1 else contextlib.nullcontext()


def in_threads(function: Callable[[Any], Any], items: Iterable) -> list:
    """``[function(item) for item in items]``, computed in :func:`worker_threads` threads
    (numpy releases the GIL in its loops), with at most two items per thread under way, so
    a lazy ``items`` is read only as fast as it is used."""
    workers = worker_threads()
    if workers == 1:
        return [function(item) for item in items]
    results = []
    with ThreadPoolExecutor(workers, thread_name_prefix="coverage") as pool:
        pending: deque = deque()
        for item in items:
            if len(pending) >= 2 * workers:
                results.append(pending.popleft().result())
            pending.append(pool.submit(function, item))
        results.extend(future.result() for future in pending)
    return results


def in_order(
    make: Callable[[int, Any], Any],
    use: Callable[[int, Any], None],
    count: int,
    *,
    scratch: Callable[[], Any] = lambda: None,
    workers: int | None = None,
) -> None:
    """``use(i, make(i, space))`` for ``i = 0 .. count - 1``: each ``make`` in one of ``workers`` threads
    (default :func:`worker_threads`), each ``use`` after ``use(i - 1)`` has returned.

    In several threads, BLAS runs one thread per call meanwhile: ``make`` is meant to multiply.
    Each thread owns one ``space = scratch()`` (a buffer ``make`` may write
    into) and uses it again only once its item's ``use`` is done, so at most
    ``workers`` spaces exist. The first error of any thread stops the others
    and is raised here.

    Raises
    ------
    Exception
        Whatever ``make`` or ``use`` raised first.
    """
    workers = min(worker_threads() if workers is None else workers, count)
    if workers <= 1:
        space = scratch()
        for i in range(count):
            use(i, make(i, space))
        return
    turn = threading.Condition()
    state = {"next": 0, "used": 0}
    errors: list[BaseException] = []

    def work() -> None:
        space = scratch()
        while True:
            with turn:
                i = state["next"]
                state["next"] += 1
            if i >= count or errors:
                return
            try:
                made = make(i, space)
                with turn:
                    turn.wait_for(lambda: state["used"] == i or bool(errors))
                    if errors:
                        return
                use(i, made)
            except BaseException as error:  # passed to the caller, and the other threads stop
                with turn:
                    errors.append(error)
                    turn.notify_all()
                return
            with turn:
                state["used"] += 1
                turn.notify_all()

    threads = [threading.Thread(target=work, name=f"coverage-{n}", daemon=True) for n in range(workers)]
    with _one_blas_thread(workers):
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    if errors:
        raise errors[0]
