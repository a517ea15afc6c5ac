"""Work in threads: items made in several threads and used one at a time, in order."""

import threading
import time

import pytest

from coverage_core import threads


@pytest.mark.parametrize("workers", [1, 2, 5])
def test_in_order_uses_every_item_once_in_order_with_one_space_per_thread(workers):
    used, makers, spaces = [], set(), []

    def scratch():
        spaces.append(object())
        return spaces[-1]

    def make(i, space):
        makers.add(threading.get_ident())
        time.sleep(0.002 * ((i * 7) % 5))  # uneven work: later items often finish first
        return i * i, space

    def use(i, made):
        assert made[0] == i * i
        assert not used or used[-1] == i - 1  # strictly after the item before it
        used.append(i)

    threads.in_order(make, use, 40, scratch=scratch, workers=workers)
    assert used == list(range(40))
    assert len(spaces) == workers and len(makers) == workers


def test_in_order_reuses_a_thread_s_space_only_after_its_item_was_used():
    in_use: dict = {}

    def make(i, space):
        assert id(space) not in in_use.values()  # nobody still reads this buffer
        in_use[i] = id(space)
        return space

    def use(i, space):
        time.sleep(0.001)
        del in_use[i]

    threads.in_order(make, use, 30, scratch=lambda: bytearray(8), workers=3)
    assert in_use == {}


@pytest.mark.parametrize("where", ["make", "use"])
def test_in_order_raises_the_first_error_and_stops(where):
    done = []

    def make(i, _):
        if where == "make" and i == 9:
            raise ValueError("item 9")
        return i

    def use(i, made):
        if where == "use" and i == 9:
            raise ValueError("item 9")
        done.append(i)

    with pytest.raises(ValueError, match="item 9"):
        threads.in_order(make, use, 100, workers=3)
    assert done == list(range(len(done))) and len(done) <= 9  # nothing after the failed item is used
    if where == "use":
        assert done == list(range(9))  # every item before it was


def test_in_order_with_no_items_or_one_worker_runs_in_the_caller_s_thread():
    threads.in_order(lambda i, _: i, lambda i, made: pytest.fail("no item to use"), 0, workers=4)
    seen = []
    threads.in_order(lambda i, _: threading.get_ident(), lambda i, made: seen.append(made), 3, workers=1)
    assert seen == [threading.get_ident()] * 3


def test_workers_for_a_few_items_start_no_idle_thread(monkeypatch):
    monkeypatch.setattr(threads, "worker_threads", lambda: 4)
    assert [threads.workers_for(n) for n in (0, 1, 2, 4, 10)] == [1, 1, 2, 4, 4]
