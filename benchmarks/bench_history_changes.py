"""Time "what changed" (``coverage_core.history.changes_since``) between two 200k-chunk runs.

Two synthetic snapshots (:func:`synthetic_snapshot`) shaped like a 200,000-chunk
analysis: 10,000 documents of 20 chunks, 5,000 questions, 500 topics. The
second run drops 20 documents, edits 50, adds 30 (half of them untested),
drops 25 questions and adds 40, and draws new tested shares, so topics lose
and gain tests; its topics are renumbered (shuffled) and some relabelled, as
a real re-clustering does. Target: under 2 s (issue 23). Also timed, for the
store's sake: ``RunSnapshot.to_dict`` and ``from_dict`` of one run.

    .venv/bin/python benchmarks/bench_history_changes.py [--documents 10000] [--questions 5000]
        [--topics 500] [--repeats 5] [--smoke]

``--smoke``: 200 documents, 100 questions, 20 topics, once; the exit code then ignores the target.

``synthetic_snapshot`` is also the store benchmark's data (benchmarks/bench_history.py).
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np

PROJECT = Path(__file__).resolve().parents[1]
if str(PROJECT) not in sys.path:
    sys.path.insert(0, str(PROJECT))

sys.path.insert(0, str(Path(__file__).resolve().parent))
from shared_data import SMOKE_HELP  # noqa: E402

from coverage_core.history.changes import changes_since  # noqa: E402
from coverage_core.history.snapshot import (  # noqa: E402
    TOPIC_DOCUMENTS_KEPT,
    DocumentState,
    QuestionState,
    RunSnapshot,
    TopicState,
    question_hash,
)

TARGET_SECONDS = 2.0
CHUNKS_PER_DOCUMENT = 20
# Each document's chunks: most in its main topic, the rest in a second one, as real documents mostly are.
MAIN_TOPIC_CHUNKS = 14
EPOCH = datetime(2026, 1, 1, tzinfo=timezone.utc)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def synthetic_snapshot(
    n_documents: int = 10_000,
    n_questions: int = 5_000,
    n_topics: int = 500,
    seed: int = 0,
    *,
    documents_added: int = 0,
    documents_removed: int = 0,
    documents_changed: int = 0,
    questions_added: int = 0,
    questions_removed: int = 0,
    label: str | None = None,
    recorded_at: datetime | None = None,
    shuffle_topics: bool | None = None,
) -> RunSnapshot:
    """A run of ``n_documents`` × 20 chunks, ``n_questions`` questions and ``n_topics`` topics.

    Documents ``doc-000000.txt`` … and questions are the same for every seed, so two snapshots of one size
    share them; ``seed`` draws the tested shares (and the topic order, shuffled unless seed 0 or
    ``shuffle_topics`` says otherwise). Relative to that base: the first ``documents_removed`` documents
    are left out, the next ``documents_changed`` get another content hash, ``documents_added`` new ones
    are appended (every other one untested); the first ``questions_removed`` questions are left out and
    ``questions_added`` new ones appended. ``recorded_at`` defaults to ``seed`` hours after 2026-01-01.
    """
    rng = np.random.default_rng(seed)
    kept = range(documents_removed, n_documents)
    indices = list(kept) + list(range(n_documents, n_documents + documents_added))
    n = len(indices)
    tested_share = np.round(rng.beta(2.0, 2.0, n), 6)
    untested = rng.random(n) < 0.08
    untested[len(kept):] = np.arange(documents_added) % 2 == 0
    tested_share[untested] = 0.0
    undertested = ~untested & (tested_share < 0.3)
    documents = []
    hashes = []
    for position, index in enumerate(indices):
        version = 1 if documents_removed <= index < documents_removed + documents_changed else 0
        digest = _digest(f"document {index} version {version}")
        hashes.append(digest)
        documents.append(DocumentState(
            name=f"doc-{index:06d}.txt", content_hash=digest, n_chunks=CHUNKS_PER_DOCUMENT,
            tested_share=float(tested_share[position]), is_untested=bool(untested[position]),
            is_undertested=bool(undertested[position]),
        ))
    topics = _topics(indices, hashes, n_topics, rng, seed if shuffle_topics is None else int(shuffle_topics))
    question_indices = list(range(questions_removed, n_questions)) + list(range(n_questions, n_questions + questions_added))
    offtopic = rng.random(len(question_indices)) < 0.03
    questions = []
    for index, is_offtopic in zip(question_indices, offtopic):
        text = f"What does section {index} say about subject {index % n_topics}?"
        questions.append(QuestionState(question_hash(text), text, bool(is_offtopic),
                                       "no_support" if is_offtopic else ""))
    n_chunks = n * CHUNKS_PER_DOCUMENT
    n_tested = int(round(float(tested_share.mean()) * n_chunks))
    headline = {
        "tested_share": round(n_tested / n_chunks, 6), "basic": round(float(rng.uniform(0.4, 0.7)), 6),
        "weighted": round(float(rng.uniform(0.4, 0.7)), 6), "balanced": None,
        "multi_threshold": None, "multi_n": None,
        "n_documents": n, "n_chunks": n_chunks, "n_tested_chunks": n_tested,
        "n_questions": len(questions), "n_distinct_questions": len(questions),
        "n_untested_documents": int(untested.sum()), "n_undertested_documents": int(undertested.sum()),
        "n_offtopic_questions": int(offtopic.sum()), "n_topics": len(topics),
        "n_gaps": sum(topic.is_gap for topic in topics),
    }
    return RunSnapshot(
        recorded_at=recorded_at or EPOCH + timedelta(hours=seed), label=label, tool_version="0.1.0",
        provider="local", model="all-MiniLM-L6-v2", support_threshold=0.5, threshold_reliable=True,
        headline=headline, documents=tuple(documents), questions=tuple(questions), topics=tuple(topics),
        traffic=None,
    )


def _topics(indices, hashes, n_topics, rng, shuffle) -> list[TopicState]:
    """Topic members from each document's index (stable across seeds), tested shares drawn from ``rng``."""
    members: list[list[tuple[str, int]]] = [[] for _ in range(n_topics)]
    for index, digest in zip(indices, hashes):
        members[index % n_topics].append((digest, MAIN_TOPIC_CHUNKS))
        members[(index * 7 + 3) % n_topics].append((digest, CHUNKS_PER_DOCUMENT - MAIN_TOPIC_CHUNKS))
    shares = np.round(rng.beta(1.5, 1.5, n_topics), 6)
    shares[rng.random(n_topics) < 0.1] = 0.0
    order = rng.permutation(n_topics) if shuffle else np.arange(n_topics)
    relabelled = rng.random(n_topics) < 0.2
    topics = []
    for topic in order.tolist():
        largest = sorted(members[topic], key=lambda member: (-member[1], member[0]))[:TOPIC_DOCUMENTS_KEPT]
        size = sum(chunks for _, chunks in members[topic])
        share = float(shares[topic])
        topics.append(TopicState(
            label=f"subject {topic} · words" + (" · renamed" if relabelled[topic] else ""),
            n_chunks=size, n_questions=int(rng.integers(0, 30)), tested_share=share, is_gap=share < 0.5,
            documents=tuple(largest),
        ))
    return topics


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--documents", type=int, default=10_000)
    parser.add_argument("--questions", type=int, default=5_000)
    parser.add_argument("--topics", type=int, default=500)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--smoke", action="store_true", help="200 documents, 100 questions, 20 topics, once: "
                        + SMOKE_HELP)
    args = parser.parse_args(argv)
    if args.smoke:
        args.documents, args.questions, args.topics, args.repeats = 200, 100, 20, 1
    shape = (args.documents, args.questions, args.topics)
    started = time.perf_counter()
    previous = synthetic_snapshot(*shape, seed=0, label="main")
    current = synthetic_snapshot(*shape, seed=1, label="main", documents_added=30, documents_removed=20,
                                 documents_changed=50, questions_added=40, questions_removed=25)
    built = time.perf_counter() - started
    timings, changes = [], None
    for _ in range(args.repeats):
        started = time.perf_counter()
        changes = changes_since(previous, current, previous_run=1)
        timings.append(time.perf_counter() - started)
    started = time.perf_counter()
    record = current.to_dict()
    to_dict_seconds = time.perf_counter() - started
    started = time.perf_counter()
    RunSnapshot.from_dict(record)
    from_dict_seconds = time.perf_counter() - started
    worst = max(timings)
    n_chunks = current.headline["n_chunks"]
    print(f"two runs of {n_chunks:,} chunks ({args.documents:,} documents, {args.questions:,} questions, "
          f"{args.topics} topics), built in {built:.2f} s")
    print(f"changes_since: median {statistics.median(timings):.3f} s, worst {worst:.3f} s of {args.repeats} "
          f"(target < {TARGET_SECONDS:.0f} s: {'ok' if worst < TARGET_SECONDS else 'MISSED'})")
    print(f"  {len(changes.documents_added)} added, {len(changes.documents_removed)} removed, "
          f"{len(changes.documents_changed)} changed documents; {len(changes.questions_added)} questions added, "
          f"{len(changes.questions_removed)} removed; {len(changes.topics_lost)} topics lost tests, "
          f"{len(changes.topics_gained)} gained")
    print(f"  reason: {changes.reason}")
    print(f"to_dict {to_dict_seconds:.3f} s, from_dict {from_dict_seconds:.3f} s (one run)")
    return 0 if worst < TARGET_SECONDS or args.smoke else 1


if __name__ == "__main__":
    sys.exit(main())
