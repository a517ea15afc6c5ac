"""The history store on a real PostgreSQL server (started by tests/history/conftest.py): round trip, concurrent
writers, and credentials never shown."""

from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor
from datetime import datetime, timezone
from multiprocessing import get_context

import pytest
import sqlalchemy as sa

from coverage_core.errors import InputError
from coverage_core.history.store import HistoryStore
from tests.history.conftest import make_decisions, make_snapshot, record_runs


def test_a_run_round_trips_through_postgresql(postgres_database):
    snapshot = make_snapshot(3000, keep_text=True, seed=4, decisions=make_decisions(40),
                             recorded_at=datetime(2026, 5, 1, 8, 30, 0, 654321, tzinfo=timezone.utc))
    with HistoryStore(postgres_database) as store:
        info = store.record(snapshot)
        again = store.record(make_snapshot(3000, seed=4, label="release", untested=(0, 1)))
        assert store.load(info.run) == snapshot and store.decisions(info.run) == snapshot.decisions
        assert store.decisions(again.run) is None  # recorded without them: not known
        assert [r.run for r in store.runs()] == [info.run, again.run] and again.run > info.run
        assert store.resolve("release").run == again.run and store.latest("main").run == info.run
        timeline = [(name, run, state) for name, run, _, state in store.document_timeline()]
    assert ("doc-0003.txt", again.run, False) in timeline and ("doc-0001.txt", again.run, True) in timeline
    with HistoryStore(postgres_database) as reopened:  # a second open finds the schema at head and keeps the runs
        assert len(reopened.runs()) == 2


def test_four_processes_recording_into_postgresql_lose_nothing(postgres_database):
    with ProcessPoolExecutor(4, mp_context=get_context("fork")) as pool:
        ids = list(pool.map(record_runs, [postgres_database] * 4, [f"job-{i}" for i in range(4)], [10] * 4))
    every_id = [run for worker in ids for run in worker]
    assert len(every_id) == len(set(every_id)) == 40
    with HistoryStore(postgres_database) as store:
        assert sorted(r.run for r in store.runs()) == sorted(every_id)
        assert [len(store.runs(f"job-{i}")) for i in range(4)] == [10] * 4
        loaded = store.load(ids[1][6])
        assert loaded == make_snapshot(label="job-1", seed=6, recorded_at=loaded.recorded_at)
    engine = sa.create_engine(postgres_database)
    with engine.connect() as connection:
        assert connection.execute(sa.text("SELECT version_num FROM alembic_version")).scalars().all() == ["0004"]
    engine.dispose()


@pytest.mark.parametrize("where", ["wrong password port", "unknown database"])
def test_a_password_in_the_url_never_appears_in_the_error(postgres_url, where):
    host = postgres_url.split("@", 1)[1].rsplit("/", 1)[0]
    url = {"wrong password port": "postgresql://history_test:Sup3rSecret@127.0.0.1:1/postgres",
           "unknown database": f"postgresql://history_test:Sup3rSecret@{host}/no_such_database"}[where]
    with pytest.raises(InputError) as raised:
        HistoryStore(url)
    message = str(raised.value)
    assert "Sup3rSecret" not in message and "history_test:***@" in message
    assert message.startswith("Cannot reach the history database") and message.endswith(".")
    assert raised.value.__cause__ is None and raised.value.__suppress_context__
