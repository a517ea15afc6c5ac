"""The history store (``coverage_core.history.store``): recording time, loading and comparing, concurrent
writers, and what a run costs on disk.

Data: :func:`bench_history_changes.synthetic_snapshot` (documents of 20 chunks, questions, topics, random
tested shares). Measured, each against issue 23's target:

* recording a run the size of the bundled example (30 documents, ~160 questions, 12 topics) into a SQLite
  file: < 0.2 s (opening the file, which checks the schema, is timed apart); the median of 20 runs;
* recording a 200,000-chunk run (10,000 documents, 5,000 questions, 500 topics): < 5 s; and the same from a
  report and its documents (the snapshot built, every document's text hashed, then recorded);
* loading two such runs and ``changes_since`` between them: < 2 s;
* listing 1,000 runs, and the document timeline over them (2,000 documents): "fast", taken as < 1 s;
* 8 processes × 50 runs (example size) into one SQLite file and into PostgreSQL (a server started for the
  benchmark, as the tests do): 400 runs recorded, none lost or duplicated;
* bytes per run of a 1,000,000-chunk corpus (50,000 documents, 5,000 questions, 500 topics), SQLite file
  growth over 10 runs (after a WAL checkpoint): an unchanged run (same corpus, questions and results), a run
  whose results changed (new tested shares: another test set or τ), and runs that each edit 10 or 100
  documents scattered over the corpus and get new shares; with the projection to 10,000 runs. Measured twice:
  with random tested shares (the worst case: every share a distinct float64) and with shares rounded to k/20,
  as the shares (tested chunks / chunks) of 20-chunk documents are.

    .venv/bin/python benchmarks/bench_history.py [--skip-postgres] [--large-documents 50000] [--smoke]

``--smoke``: every measure at a tiny size (200-document "large" runs, 20 runs in the timeline, 2 writers x 3
runs, 200 documents for the bytes per run, 2 runs each), PostgreSQL included unless ``--skip-postgres``.
"""

from __future__ import annotations

import argparse
import dataclasses
import sqlite3
import statistics
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from datetime import timedelta
from multiprocessing import get_context
from pathlib import Path

import numpy as np

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT))
sys.path.insert(0, str(PROJECT / "benchmarks"))

from bench_history_changes import synthetic_snapshot  # noqa: E402
from shared_data import SMOKE_HELP  # noqa: E402

from coverage_core.history.changes import changes_since  # noqa: E402
from coverage_core.history.store import HistoryStore  # noqa: E402

EXAMPLE = {"n_documents": 30, "n_questions": 160, "n_topics": 12}
LARGE = {"n_documents": 10_000, "n_questions": 5_000, "n_topics": 500}
RUNS_PROJECTED = 10_000
WRITERS, RUNS_PER_WRITER = 8, 50
TIMELINE_RUNS = 1_000
RUNS_PER_SIZE = 10


def _row(what: str, value: str, target: str = "", met: bool | None = None) -> None:
    verdict = "" if met is None else ("met" if met else "NOT MET")
    print(f"{what:<58} {value:>16}  {target:<22} {verdict}")


def _large() -> str:
    """The large run's size as the rows name it ("200k-chunk")."""
    return f"{20 * LARGE['n_documents'] // 1000}k-chunk"


def _file_bytes(path: Path) -> int:
    with sqlite3.connect(path) as connection:
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return path.stat().st_size


def bench_example(folder: Path) -> None:
    path = folder / "example.sqlite"
    started = time.perf_counter()
    store = HistoryStore(path)
    _row("open a new SQLite history (schema created)", f"{time.perf_counter() - started:.3f} s")
    store.close()
    started = time.perf_counter()
    store = HistoryStore(path)
    _row("open an existing history (schema checked)", f"{time.perf_counter() - started:.3f} s")
    times = []
    for seed in range(20):
        snapshot = synthetic_snapshot(**EXAMPLE, seed=seed, documents_added=seed % 3, label="main")
        started = time.perf_counter()
        store.record(snapshot)
        times.append(time.perf_counter() - started)
    store.close()
    median = statistics.median(times)
    _row("record an example-size run (median of 20)", f"{median:.4f} s", "< 0.2 s", median < 0.2)


def bench_large(folder: Path) -> None:
    path = folder / "large.sqlite"
    first = synthetic_snapshot(**LARGE, seed=1, label="main")
    second = synthetic_snapshot(**LARGE, seed=2, label="main", documents_added=30, documents_removed=20,
                                documents_changed=50, questions_added=40, questions_removed=25)
    with HistoryStore(path) as store:
        started = time.perf_counter()
        store.record(first)
        into_empty = time.perf_counter() - started
        started = time.perf_counter()
        info = store.record(second)
        with_changes = time.perf_counter() - started
    _row(f"record a {_large()} run into an empty history", f"{into_empty:.3f} s", "< 5 s", into_empty < 5)
    _row(f"record the next {_large()} run (100 documents changed)", f"{with_changes:.3f} s", "< 5 s",
         with_changes < 5)
    with HistoryStore(path) as store:  # a fresh store: nothing cached from recording
        started = time.perf_counter()
        previous, current = store.load(info.run - 1), store.load(info.run)
        loaded = time.perf_counter() - started
        changes = changes_since(previous, current, previous_run=info.run - 1)
        total = time.perf_counter() - started
    assert previous == first and current == second
    _row(f"load two {_large()} runs", f"{loaded:.3f} s")
    _row(f"load two {_large()} runs + changes_since", f"{total:.3f} s", "< 2 s", total < 2)
    print(f"  what changed: {changes.reason}")


def _large_report(n_documents: int, n_questions: int, n_topics: int, rng: np.random.Generator) -> tuple[dict, list, dict]:
    """A schema-6 report of ``n_documents`` documents of 20 chunks (about 20,000 characters each), with its
    documents and each topic's documents: what ``analyze`` hands the history after a 200k-chunk analysis."""
    from coverage_core.types import Document

    words = np.array(["passage", "topic", "question", "corpus", "tested", "margin", "revenue", "species"])
    documents = [Document(name=f"doc-{i:05d}.txt", text=" ".join(rng.choice(words, size=2_500)))
                 for i in range(n_documents)]
    report = {
        "schema_version": 6,
        "config": {"embedding": {"provider": "local", "model": "all-MiniLM-L6-v2"}},
        "calibration": {"support_threshold": 0.5, "reliable": True},
        "metrics": {"tested_share": 0.6, "basic": 0.5, "weighted": 0.5, "balanced": 0.5},
        "summary": {"n_documents": n_documents, "n_chunks": 20 * n_documents, "n_questions": n_questions},
        "clusters": [{"id": t, "label": f"topic {t}", "size": 20 * n_documents // n_topics, "n_questions": 10,
                      "tested_share": float(rng.random()), "is_gap": bool(rng.random() < 0.2)}
                     for t in range(n_topics)],
        "documents": [{"name": d.name, "n_chunks": 20, "n_tested": int(k), "tested_share": k / 20,
                       "is_untested": bool(k == 0), "is_undertested": False}
                      for d, k in zip(documents, rng.integers(0, 21, size=n_documents))],
        "questions": [{"row": q, "text": f"What does passage {q} say about the topic?", "is_outlier": q % 50 == 0,
                       "offtopic_reason": "no_support" if q % 50 == 0 else ""} for q in range(n_questions)],
    }
    members = {t: [(documents[(t * 20 + j) % n_documents].name, 20) for j in range(20)] for t in range(n_topics)}
    return report, documents, members


def bench_from_report(folder: Path) -> None:
    from coverage_core.history.snapshot import snapshot_of

    report, documents, members = _large_report(**LARGE, rng=np.random.default_rng(0))
    with HistoryStore(folder / "from-report.sqlite") as store:
        started = time.perf_counter()
        snapshot = snapshot_of(report, documents, label="main", topic_documents=members)
        built = time.perf_counter() - started
        store.record(snapshot)
        total = time.perf_counter() - started
    megabytes = sum(len(d.text) for d in documents) / 1e6
    _row(f"snapshot of a {_large()} report ({megabytes:.0f} MB of text hashed)", f"{built:.3f} s")
    _row(f"snapshot + record, {_large()} run (what analyze --record adds)", f"{total:.3f} s", "< 5 s", total < 5)


def bench_timeline(folder: Path, n_runs: int | None = None) -> None:
    """``document_timeline`` over ``n_runs`` runs of 2,000 documents: verdicts flip every 10th run, 20 documents
    are added every 100th (the History page's per-document timeline)."""
    n_runs = n_runs or TIMELINE_RUNS
    path = folder / "timeline.sqlite"
    rng = np.random.default_rng(3)
    with HistoryStore(path) as store:
        snapshot = synthetic_snapshot(2_000, 500, 50, seed=0, label="main")
        started = time.perf_counter()
        for run in range(n_runs):
            if run % 100 == 99:
                snapshot = synthetic_snapshot(2_000, 500, 50, seed=0, label="main", documents_added=run // 5)
            if run % 10 == 9:
                documents = list(snapshot.documents)
                for index in rng.choice(len(documents), 5, replace=False).tolist():
                    documents[index] = dataclasses.replace(documents[index],
                                                           is_untested=not documents[index].is_untested)
                snapshot = dataclasses.replace(snapshot, documents=tuple(documents))
            store.record(dataclasses.replace(snapshot, recorded_at=snapshot.recorded_at + timedelta(hours=run)))
        recording = time.perf_counter() - started
    with HistoryStore(path) as store:
        started = time.perf_counter()
        runs = store.runs()
        listed = time.perf_counter() - started
        started = time.perf_counter()
        events = store.document_timeline()
        timeline = time.perf_counter() - started
    _row(f"record {n_runs:,} runs of 2,000 documents", f"{recording:.1f} s")
    _row(f"runs() of {len(runs):,} runs", f"{listed:.3f} s")
    _row(f"document_timeline over {n_runs:,} runs ({len(events):,} events)", f"{timeline:.3f} s", "< 1 s",
         timeline < 1)


def _record_small_runs(target: str, writer: int) -> list[int]:
    with HistoryStore(target) as store:
        return [store.record(synthetic_snapshot(**EXAMPLE, seed=writer * 1000 + run, label=f"writer-{writer}")).run
                for run in range(RUNS_PER_WRITER)]


def bench_concurrency(target: str, name: str) -> None:
    started = time.perf_counter()
    with ProcessPoolExecutor(WRITERS, mp_context=get_context("fork")) as pool:
        ids = list(pool.map(_record_small_runs, [target] * WRITERS, range(WRITERS)))
    elapsed = time.perf_counter() - started
    every = [run for writer in ids for run in writer]
    with HistoryStore(target) as store:
        stored = store.runs()
        per_label = [len(store.runs(f"writer-{w}")) for w in range(WRITERS)]
    ok = (len(every) == len(set(every)) == len(stored) == WRITERS * RUNS_PER_WRITER
          and per_label == [RUNS_PER_WRITER] * WRITERS and sorted(every) == [r.run for r in stored])
    _row(f"{WRITERS} writers x {RUNS_PER_WRITER} runs into {name}",
         f"{len(stored)} runs, {elapsed:.1f} s", f"{WRITERS * RUNS_PER_WRITER}, no dup", ok)


def _with_realistic_shares(snapshot):
    documents = tuple(dataclasses.replace(d, tested_share=round(d.tested_share * 20) / 20)
                      for d in snapshot.documents)
    return dataclasses.replace(snapshot, documents=documents)


def _scattered_edits(snapshot, n_edits: int, rng: np.random.Generator, edited: dict[int, str]):
    """``snapshot`` with every earlier edit in ``edited`` and ``n_edits`` more, at random places (cumulative)."""
    for index in rng.choice(len(snapshot.documents), n_edits, replace=False).tolist():
        edited[index] = rng.bytes(32).hex()
    documents = list(snapshot.documents)
    for index, content_hash in edited.items():
        documents[index] = dataclasses.replace(documents[index], content_hash=content_hash)
    return dataclasses.replace(snapshot, documents=tuple(documents))


def bench_size(folder: Path, n_documents: int, realistic: bool, n_runs: int | None = None) -> None:
    n_runs = n_runs or RUNS_PER_SIZE
    shape = {"n_documents": n_documents, "n_questions": LARGE["n_questions"], "n_topics": LARGE["n_topics"]}
    adjust = _with_realistic_shares if realistic else (lambda snapshot: snapshot)
    base = adjust(synthetic_snapshot(**shape, seed=0))
    folder.mkdir()
    path = folder / "size.sqlite"
    print(f"-- tested shares: {'k/20, as those of 20-chunk documents' if realistic else 'random floats (worst case)'}")
    rng = np.random.default_rng(0)
    edits_10: dict[int, str] = {}
    edits_100: dict[int, str] = {}
    with HistoryStore(path) as store:
        store.record(base)
        first = _file_bytes(path)
        _row(f"first run of {n_documents:,} documents ({20 * n_documents:,} chunks)", f"{first / 1e6:.1f} MB")
        scenarios = [
            ("unchanged run", lambda i: base),
            ("results changed (new tested shares)", lambda i: adjust(synthetic_snapshot(**shape, seed=100 + i))),
            ("10 documents edited + new shares", lambda i: _scattered_edits(
                adjust(synthetic_snapshot(**shape, seed=200 + i)), 10, rng, edits_10)),
            ("100 documents edited + new shares", lambda i: _scattered_edits(
                adjust(synthetic_snapshot(**shape, seed=300 + i)), 100, rng, edits_100)),
        ]
        for name, make in scenarios:
            before = _file_bytes(path)
            snapshots = [make(i) for i in range(n_runs)]
            for i, snapshot in enumerate(snapshots):
                store.record(dataclasses.replace(snapshot, recorded_at=base.recorded_at + timedelta(minutes=i)))
            per_run = (_file_bytes(path) - before) / n_runs
            projected = (first + per_run * (RUNS_PROJECTED - 1)) / 1e9
            _row(f"bytes per run: {name}", f"{per_run / 1e3:,.1f} KB", f"{RUNS_PROJECTED:,} runs: {projected:.2f} GB")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--skip-postgres", action="store_true", help="leave out the PostgreSQL writers")
    parser.add_argument("--large-documents", type=int, default=50_000,
                        help="documents of the corpus whose bytes per run are measured (20 chunks each)")
    parser.add_argument("--smoke", action="store_true", help="every measure at a tiny size: " + SMOKE_HELP)
    args = parser.parse_args(argv)
    if args.smoke:
        global LARGE, TIMELINE_RUNS, WRITERS, RUNS_PER_WRITER, RUNS_PER_SIZE
        LARGE = {"n_documents": 200, "n_questions": 100, "n_topics": 20}
        TIMELINE_RUNS, WRITERS, RUNS_PER_WRITER, RUNS_PER_SIZE = 20, 2, 3, 2
        args.large_documents = 200
    print(f"{'measure':<58} {'value':>16}  {'target':<22}")
    with tempfile.TemporaryDirectory(prefix="bench-history-") as name:
        folder = Path(name)
        bench_example(folder)
        bench_large(folder)
        bench_from_report(folder)
        bench_timeline(folder)
        bench_concurrency(str(folder / "concurrent.sqlite"), "one SQLite file")
        if not args.skip_postgres:
            from tests.history.conftest import running_postgres

            with running_postgres() as url:
                bench_concurrency(url, "PostgreSQL")
        for realistic in (False, True):
            bench_size(folder / ("realistic" if realistic else "random"), args.large_documents, realistic)
    return 0


if __name__ == "__main__":
    sys.exit(main())
