"""The history store on SQLite: round trip, queries, timeline, size, concurrency, faults, migration, redaction."""

from __future__ import annotations

import hashlib
import os
import signal
import sqlite3
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from datetime import datetime, timedelta, timezone
from multiprocessing import get_context

import pytest

from coverage_core.errors import InputError
from coverage_core.history.location import (
    DEFAULT_HISTORY_FILE,
    HISTORY_ENV,
    LABEL_MAX_CHARS,
    default_history_target,
    redact_history_url,
)
from coverage_core.history.store import PAUSE_IN_RECORD_ENV, HistoryStore, open_history
from tests.helpers import PROJECT
from tests.history.conftest import empty_history_at, make_decisions, make_snapshot, record_runs

T0 = datetime(2026, 3, 1, 12, 0, 0, 123456, tzinfo=timezone.utc)


def _count(path, table: str) -> int:
    with sqlite3.connect(path) as connection:
        return connection.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]


def _fingerprint(path) -> tuple[bytes, int]:
    return hashlib.sha256(path.read_bytes()).digest(), path.stat().st_mtime_ns


# ---------------------------------------------------------------- round trip and queries


@pytest.mark.parametrize("keep_text", [False, True])
def test_a_recorded_run_loads_back_exactly(tmp_path, keep_text):
    snapshot = make_snapshot(40, recorded_at=T0, keep_text=keep_text, seed=2)
    with HistoryStore(tmp_path / "h.sqlite") as store:
        info = store.record(snapshot)
        loaded = store.load(info.run)
    assert loaded == snapshot
    assert loaded.to_dict() == snapshot.to_dict()
    assert loaded.documents[1].tested_share is None and loaded.topics[1].documents == (("f" * 64, 2),)
    assert (loaded.documents[3].text is not None) is keep_text
    assert (info.run, info.label, info.recorded_at, dict(info.headline)) == (1, "main", T0, dict(snapshot.headline))


def _without_passages(decisions) -> tuple:
    from dataclasses import replace

    return tuple(replace(d, passage="") for d in decisions)


@pytest.mark.parametrize("n_decisions", [0, 7, 3000])  # none decided; one slice; slices under an index level
def test_a_runs_decisions_load_back_exactly_and_a_run_without_them_has_none_known(tmp_path, n_decisions):
    decided = make_snapshot(recorded_at=T0, decisions=make_decisions(n_decisions))
    unknown = make_snapshot(recorded_at=T0, seed=1)
    with HistoryStore(tmp_path / "h.sqlite") as store:
        with_them, without = store.record(decided).run, store.record(unknown).run
        loaded = store.load(with_them)
        assert loaded == decided and loaded.to_dict() == decided.to_dict()
        assert loaded.decisions == _without_passages(make_decisions(n_decisions))  # passages are not kept
        assert isinstance(loaded.decisions, tuple) and {d.decision for d in loaded.decisions} == (
            {"accepted", "rejected", "open"} if n_decisions else set())
        assert store.decisions(with_them) == loaded.decisions  # read alone, the same
        assert store.load(without).decisions is None and store.decisions(without) is None  # not known, not ()
        with pytest.raises(InputError, match="^There is no run 99 in the history"):
            store.decisions(99)
    with sqlite3.connect(tmp_path / "h.sqlite") as connection:
        digests = dict(connection.execute("SELECT id, decisions_digest FROM runs").fetchall())
        kinds = {kind for (kind,) in connection.execute("SELECT DISTINCT kind FROM parts")}
    assert digests[without] is None and digests[with_them] is not None
    assert ("decisions_index" in kinds) is (n_decisions == 3000)


def test_the_same_decisions_are_stored_once_and_one_more_adds_one_slice(tmp_path):
    from dataclasses import replace

    decisions = make_decisions(600)
    with HistoryStore(tmp_path / "h.sqlite") as store:
        store.record(make_snapshot(decisions=decisions))
        before = _count(tmp_path / "h.sqlite", "parts")
        store.record(make_snapshot(seed=0, decisions=decisions))
        assert _count(tmp_path / "h.sqlite", "parts") == before  # shared with the run before
        more = decisions[:300] + (replace(decisions[0], question="A new one?"),) + decisions[300:]
        run = store.record(make_snapshot(seed=0, decisions=more)).run
        assert store.decisions(run) == _without_passages(more)
        assert _count(tmp_path / "h.sqlite", "parts") - before <= 3  # its slice, the manifest (and one index)


@pytest.mark.parametrize("n_documents", [600, 3000])  # shares in a table of two-byte indices / stored as they are
def test_many_distinct_shares_and_an_empty_run_round_trip(tmp_path, n_documents):
    import dataclasses

    base = make_snapshot(n_documents, recorded_at=T0)
    distinct = dataclasses.replace(base, documents=tuple(
        dataclasses.replace(d, tested_share=None if d.tested_share is None else i / 3001)
        for i, d in enumerate(base.documents)))
    empty = dataclasses.replace(base, documents=(), questions=(), topics=(), headline={}, label=None)
    with HistoryStore(tmp_path / "h.sqlite") as store:
        assert store.load(store.record(distinct).run) == distinct
        assert store.load(store.record(empty).run) == empty


def test_runs_latest_and_resolve_by_number_and_label(tmp_path):
    with open_history(str(tmp_path / "h.sqlite")) as store:
        assert store.runs() == [] and store.latest() is None and store.document_timeline() == []
        labels = ["main", "feature", "main", None, "2024"]
        infos = [store.record(make_snapshot(label=label, seed=i, recorded_at=T0 + timedelta(hours=i)))
                 for i, label in enumerate(labels)]
        assert [r.run for r in store.runs()] == [1, 2, 3, 4, 5]
        assert [r.run for r in store.runs("main")] == [1, 3]
        assert store.runs()[3].label is None and store.runs()[1].recorded_at == T0 + timedelta(hours=1)
        assert store.runs()[2].headline == infos[2].headline and store.runs()[2].support_threshold == 0.412
        assert store.latest().run == 5 and store.latest("main").run == 3
        assert store.latest("main", before=3).run == 1 and store.latest("main", before=1) is None
        assert store.resolve("2").run == 2 and store.resolve(" main ").run == 3
        assert store.resolve("2024").run == 5  # digits that are no run number are a label
        with pytest.raises(InputError, match=r"^No run numbered or labelled 'release' is in the history .*h\.sqlite"):
            store.resolve("release")
        with pytest.raises(InputError, match="^There is no run 99 in the history"):
            store.load(99)


@pytest.mark.parametrize("label", ["x" * (LABEL_MAX_CHARS + 1), "main\nrelease"])
def test_a_label_that_cannot_be_stored_is_refused(tmp_path, label):
    with HistoryStore(tmp_path / "h.sqlite") as store:
        with pytest.raises(InputError, match=f"^A run label must be one line of at most {LABEL_MAX_CHARS} characters"):
            store.record(make_snapshot(label=label))
        store.record(make_snapshot(label="x" * LABEL_MAX_CHARS))
        assert [r.label for r in store.runs()] == ["x" * LABEL_MAX_CHARS]


def test_default_target_comes_from_the_environment():
    assert default_history_target({}) == DEFAULT_HISTORY_FILE == ".coverage-history.sqlite"
    assert default_history_target({HISTORY_ENV: " postgresql://u@h/db "}) == "postgresql://u@h/db"
    assert default_history_target({HISTORY_ENV: ""}) == DEFAULT_HISTORY_FILE


def test_open_history_defaults_to_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(HISTORY_ENV, raising=False)
    with open_history() as store:
        store.record(make_snapshot())
    assert (tmp_path / DEFAULT_HISTORY_FILE).is_file()


# ---------------------------------------------------------------- the document timeline


def test_the_document_timeline_lists_only_changes_of_verdict(tmp_path):
    runs = [
        make_snapshot(4, untested=(0,), label="main"),                 # 1: all four appear
        make_snapshot(4, untested=(0,), label="main", seed=5),         # 2: shares change, verdicts do not
        make_snapshot(4, untested=(), label="main", changed=(2,)),     # 3: doc 0 becomes tested; doc 2 edited only
        make_snapshot(3, untested=(), label="feature"),                # 4: doc 3 gone (feature branch)
        make_snapshot(5, untested=(4,), label="main"),                 # 5: doc 4 appears untested
    ]
    with HistoryStore(tmp_path / "h.sqlite") as store:
        for snapshot in runs:
            store.record(snapshot)
        events = [(name, run, state) for name, run, _, state in store.document_timeline()]
        main = [(name, run, state) for name, run, _, state in store.document_timeline("main")]
        at = {run: moment for _, run, moment, _ in store.document_timeline()}
    assert events == [
        ("doc-0000.txt", 1, True), ("doc-0001.txt", 1, False), ("doc-0002.txt", 1, False), ("doc-0003.txt", 1, False),
        ("doc-0000.txt", 3, False),
        ("doc-0003.txt", 4, None),
        ("doc-0003.txt", 5, False), ("doc-0004.txt", 5, True),
    ]
    assert main == events[:5] + [("doc-0004.txt", 5, True)]
    assert at[3] == runs[2].recorded_at


# ---------------------------------------------------------------- bounded size


def test_unchanged_parts_are_stored_once(tmp_path):
    path = tmp_path / "h.sqlite"
    with HistoryStore(path) as store:
        store.record(make_snapshot(3000, seed=1))
        parts_after_first = _count(path, "parts")
        store.record(make_snapshot(3000, seed=1, label="other"))  # same corpus, questions and verdicts
        assert _count(path, "parts") == parts_after_first
        # one document edited and other shares: one corpus slice, the manifest and the states, not the whole list
        store.record(make_snapshot(3000, seed=2, changed=(1500,)))
        added = _count(path, "parts") - parts_after_first
        assert parts_after_first > 5 and 2 <= added <= 5
        assert store.load(3).documents[1500].content_hash != store.load(1).documents[1500].content_hash


# ---------------------------------------------------------------- concurrency and faults


def test_four_processes_recording_at_once_lose_nothing(tmp_path):
    target = str(tmp_path / "shared.sqlite")
    with ProcessPoolExecutor(4, mp_context=get_context("fork")) as pool:
        ids = list(pool.map(record_runs, [target] * 4, [f"job-{i}" for i in range(4)], [10] * 4))
    every_id = [run for worker in ids for run in worker]
    assert len(every_id) == len(set(every_id)) == 40
    with HistoryStore(target) as store:
        runs = store.runs()
        assert sorted(r.run for r in runs) == sorted(every_id)
        assert all(len(store.runs(f"job-{i}")) == 10 for i in range(4))
        loaded = store.load(ids[2][7])
        assert loaded == make_snapshot(label="job-2", seed=7, recorded_at=loaded.recorded_at)


def test_processes_creating_a_new_history_at_once_all_succeed(tmp_path):
    target = str(tmp_path / "new.sqlite")
    with ProcessPoolExecutor(4, mp_context=get_context("fork")) as pool:
        ids = list(pool.map(record_runs, [target] * 4, ["a", "b", "c", "d"], [1] * 4))
    assert sorted(run for worker in ids for run in worker) == [1, 2, 3, 4]
    with sqlite3.connect(target) as connection:
        assert connection.execute("SELECT version_num FROM alembic_version").fetchall() == [("0004",)]
        assert connection.execute("PRAGMA journal_mode").fetchone() == ("wal",)


def _hold_exclusive_lock(path) -> sqlite3.Connection:
    """A connection holding a write lock that shuts readers out too, until it is closed."""
    holder = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
    holder.execute("PRAGMA locking_mode = EXCLUSIVE")
    holder.execute("BEGIN EXCLUSIVE")
    holder.execute("CREATE TABLE held (x)")
    return holder


def test_a_file_locked_while_opening_is_said_to_be_locked_not_damaged(tmp_path, monkeypatch):
    import coverage_core.history.store as store_module

    path = tmp_path / "held.sqlite"
    HistoryStore(path).close()
    monkeypatch.setattr(store_module, "SQLITE_BUSY_TIMEOUT_MS", 50)
    holder = _hold_exclusive_lock(path)
    try:
        with pytest.raises(InputError, match="stayed locked by another process") as raised:
            HistoryStore(path)
        assert "damaged" not in str(raised.value)
    finally:
        holder.close()
    with HistoryStore(path) as store:
        assert store.runs() == []


def test_opening_waits_out_a_lock_held_longer_than_the_busy_timeout(tmp_path, monkeypatch):
    import threading

    import coverage_core.history.store as store_module

    path = tmp_path / "held.sqlite"
    HistoryStore(path).close()
    monkeypatch.setattr(store_module, "SQLITE_BUSY_TIMEOUT_MS", 50)
    monkeypatch.setattr(store_module, "_check_sqlite_file", lambda *_: None)  # the schema read is what must wait
    holder = _hold_exclusive_lock(path)
    release = threading.Timer(1.0, holder.close)
    started = time.monotonic()
    release.start()
    try:
        with HistoryStore(path) as store:
            assert store.record(make_snapshot(seed=3)).run == 1
    finally:
        release.join()
    assert time.monotonic() - started >= 0.9


def test_a_run_killed_while_recording_leaves_no_trace(tmp_path):
    path, marker = tmp_path / "h.sqlite", tmp_path / "inside-the-transaction"
    with HistoryStore(path) as store:
        store.record(make_snapshot(seed=1))
    parts_before = _count(path, "parts")
    script = ("import sys; from tests.history.conftest import make_snapshot; "
              "from coverage_core.history.store import HistoryStore; "
              "HistoryStore(sys.argv[1]).record(make_snapshot(500, seed=7, label='killed'))")
    process = subprocess.Popen([sys.executable, "-c", script, str(path)], cwd=PROJECT,
                               env={**os.environ, PAUSE_IN_RECORD_ENV: str(marker)})
    try:
        deadline = time.monotonic() + 60
        while not marker.exists():
            assert process.poll() is None and time.monotonic() < deadline, "the recording process never got there"
            time.sleep(0.05)
        assert marker.read_text() == "2"  # the run row and its parts were written, not committed
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
    with HistoryStore(path) as store:
        assert [r.run for r in store.runs()] == [1] and store.runs("killed") == []
        assert _count(path, "parts") == parts_before
        info = store.record(make_snapshot(seed=8))
        assert store.load(info.run) == make_snapshot(seed=8, recorded_at=info.recorded_at)


def _real_history(path) -> bytes:
    with HistoryStore(path) as store:
        for seed in range(3):
            store.record(make_snapshot(2000, seed=seed, keep_text=True))
    with sqlite3.connect(path) as connection:
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return path.read_bytes()


@pytest.mark.parametrize("damage", ["random bytes", "truncated history", "text file", "another application's database",
                                    "newer schema"])
def test_a_damaged_or_foreign_file_is_refused_and_left_untouched(tmp_path, damage):
    path = tmp_path / "history.sqlite"
    if damage == "random bytes":
        path.write_bytes(os.urandom(50_000))
    elif damage == "truncated history":
        path.write_bytes(_real_history(tmp_path / "real.sqlite")[:30_000])
    elif damage == "text file":
        path.write_text("run,label\n1,main\n")
    elif damage == "another application's database":
        with sqlite3.connect(path) as connection:
            connection.execute("CREATE TABLE customers (name TEXT)")
    else:
        _real_history(path)
        with sqlite3.connect(path) as connection:
            connection.execute("UPDATE alembic_version SET version_num = '9999'")
    before = _fingerprint(path)
    time.sleep(0.01)
    with pytest.raises(InputError) as raised:
        HistoryStore(path)
    message = str(raised.value)
    assert str(path) in message and message.count(". ") == 0 and message.endswith(".")
    assert _fingerprint(path) == before
    assert not (tmp_path / "history.sqlite-wal").exists() or damage == "newer schema"


@pytest.mark.parametrize("where", ["folder", "under a file", "missing folder"])
def test_a_path_that_cannot_hold_a_file_is_refused(tmp_path, where):
    (tmp_path / "plain.txt").write_text("x")
    path = {"folder": tmp_path, "under a file": tmp_path / "plain.txt" / "h.sqlite",
            "missing folder": tmp_path / "nowhere" / "h.sqlite"}[where]
    with pytest.raises(InputError, match=r"^(The history .* is a folder|The folder of the history .* does not exist)"):
        HistoryStore(path)


# ---------------------------------------------------------------- migration


def _recorded_then_copied_back(tmp_path, snapshots, revision: str, parts_kept: str = "1") -> tuple[object, list[str]]:
    """A history of ``revision`` holding ``snapshots``: recorded at head, then copied into an empty file of
    that revision, "the way it stored them" (the part formats did not change). Returns its path and the
    columns of its runs table (what the revision had)."""
    head_path, old_path = tmp_path / "head.sqlite", tmp_path / "old.sqlite"
    with HistoryStore(head_path) as store:
        for snapshot in snapshots:
            store.record(snapshot)
    empty_history_at(old_path, revision)
    with sqlite3.connect(old_path) as old:
        old.execute("ATTACH DATABASE ? AS head", (str(head_path),))
        columns = [row[1] for row in old.execute("PRAGMA table_info(runs)")]
        old.execute(f"INSERT INTO parts SELECT * FROM head.parts WHERE {parts_kept}")
        old.execute(f"INSERT INTO runs ({', '.join(columns)}) SELECT {', '.join(columns)} FROM head.runs")
        old.commit()
        assert old.execute("SELECT version_num FROM alembic_version").fetchall() == [(revision,)]
    return old_path, columns


def test_a_history_of_the_first_schema_is_migrated_and_keeps_its_runs(tmp_path):
    snapshots = [make_snapshot(30, seed=0, untested=(0, 1)), make_snapshot(30, seed=1, untested=(1,))]
    old_path, columns = _recorded_then_copied_back(tmp_path, snapshots, "0001", "kind != 'document_verdicts'")
    assert "document_verdicts_digest" not in columns
    with HistoryStore(old_path) as store:
        assert [store.load(r.run) for r in store.runs()] == [
            make_snapshot(30, seed=s, untested=u, recorded_at=snapshots[s].recorded_at)
            for s, u in ((0, (0, 1)), (1, (1,)))]
        timeline = [(name, run, state) for name, run, _, state in store.document_timeline()]
    assert ("doc-0000.txt", 2, False) in timeline and ("doc-0001.txt", 1, True) in timeline
    with sqlite3.connect(old_path) as migrated:
        assert migrated.execute("SELECT version_num FROM alembic_version").fetchall() == [("0004",)]
        assert migrated.execute("SELECT COUNT(*) FROM runs WHERE document_verdicts_digest IS NULL").fetchone() == (0,)


# ---------------------------------------------------------------- redaction


@pytest.mark.parametrize("target, shown", [
    ("postgresql://user:s3cret@db.example.com:5432/history", "postgresql://user:***@db.example.com:5432/history"),
    ("postgresql+psycopg://ci:p/a@ss@db/h", "postgresql+psycopg://ci:***@db/h"),
    ("postgresql://ci@db/h?sslmode=require&password=s3cret", "postgresql://ci@db/h?sslmode=require&password=***"),
    ("postgresql://db/h", "postgresql://db/h"),
    ("results/.coverage-history.sqlite", "results/.coverage-history.sqlite"),
    ("sqlite:////tmp/h.sqlite", "sqlite:////tmp/h.sqlite"),
])
def test_redact_history_url(target, shown):
    assert redact_history_url(target) == shown


def test_the_shown_target_is_the_redacted_one(tmp_path):
    with HistoryStore(tmp_path / "h.sqlite") as store:
        assert store.shown_target == str(tmp_path / "h.sqlite")
    with HistoryStore(f"sqlite:///{tmp_path}/u.sqlite") as store:
        store.record(make_snapshot())
        assert store.shown_target == f"sqlite:///{tmp_path}/u.sqlite"
    assert (tmp_path / "u.sqlite").is_file()


def test_an_unknown_driver_is_one_sentence_without_the_password():
    with pytest.raises(InputError) as raised:
        HistoryStore("nosuchdb+nodriver://admin:hunter22@db.example.com/history")
    assert "hunter22" not in str(raised.value) and "admin:***@db.example.com" in str(raised.value)
    assert raised.value.__cause__ is None and raised.value.__suppress_context__


def test_a_run_with_a_damaged_part_is_one_sentence_and_the_others_still_load(tmp_path):
    import sqlite3

    path = tmp_path / "h.sqlite"
    with HistoryStore(path) as store:
        first = store.record(make_snapshot(label="main"))
        second = store.record(make_snapshot(label="main", n_documents=7, seed=1))
    with sqlite3.connect(path) as connection:
        digest = connection.execute("SELECT document_states_digest FROM runs WHERE id = ?", (second.run,)).fetchone()[0]
        assert connection.execute("SELECT COUNT(*) FROM runs WHERE document_states_digest = ?", (digest,)).fetchone()[0] == 1
        connection.execute("UPDATE parts SET data = ? WHERE digest = ?", (b"not compressed", digest))
    with HistoryStore(path) as store:
        with pytest.raises(InputError, match=rf"^Run {second.run} in the history .* is damaged and cannot be read"):
            store.load(second.run)
        assert store.load(first.run).label == "main"


def test_a_chosen_history_file_is_checked_against_the_allowed_folders(tmp_path):
    from coverage_core.history.location import check_chosen_history, history_file

    inside = tmp_path / "kept"
    inside.mkdir()
    (inside / "link.sqlite").symlink_to(tmp_path / "outside.sqlite")
    check_chosen_history(str(inside / "runs.sqlite"), [inside])
    check_chosen_history(f"sqlite:///{inside}/runs.db", [inside])
    check_chosen_history("postgresql://u:p@db/coverage", [inside])  # a server: nothing on this disk
    for refused in (tmp_path / "runs.sqlite", inside / "runs.txt", inside / ".." / "runs.sqlite", inside / "link.sqlite"):
        with pytest.raises(InputError, match="^A history file chosen here must end in .sqlite, .sqlite3, .db"):
            check_chosen_history(str(refused), [inside])
    assert history_file("sqlite:///a/b.sqlite?mode=ro") == "a/b.sqlite"
    assert history_file("postgresql://db/x") is None and history_file("runs.sqlite") == "runs.sqlite"


def test_a_history_of_the_second_schema_is_migrated_and_its_runs_have_no_decisions_known(tmp_path):
    """Revision 0003 adds the decisions column: a run recorded before it reads as "not known", never as none."""
    snapshots = [make_snapshot(30, seed=0, recorded_at=T0), make_snapshot(30, seed=1, recorded_at=T0)]
    old_path, columns = _recorded_then_copied_back(tmp_path, snapshots, "0002")
    assert "decisions_digest" not in columns and "document_verdicts_digest" in columns
    with HistoryStore(old_path) as store:
        assert [store.load(r.run) for r in store.runs()] == snapshots
        assert [store.decisions(r.run) for r in store.runs()] == [None, None]
        later = store.record(make_snapshot(30, seed=2, recorded_at=T0, decisions=make_decisions(4)))
        assert store.decisions(later.run) == _without_passages(make_decisions(4))
    with sqlite3.connect(old_path) as migrated:
        assert migrated.execute("SELECT version_num FROM alembic_version").fetchall() == [("0004",)]
        assert migrated.execute("SELECT COUNT(*) FROM runs WHERE decisions_digest IS NULL").fetchone() == (2,)
