"""Fixtures of the history tests: a real PostgreSQL server the tests own (Debian's ``postgresql`` package).

The server runs from a fresh temporary folder as an unprivileged user (``nobody`` when the tests run as root:
PostgreSQL refuses root), listens on 127.0.0.1 on a free port and on a unix socket in that folder (``-k``), trusts the
test user, and is stopped and removed at the end of the session.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

POSTGRES_USER = "history_test"
SERVER_START_SECONDS = 60


def _postgres_bin() -> Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[-3]))
    if not found:
        pytest.fail("PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb): install Debian's "
                    "postgresql package (test.sh does it) to run the history store's PostgreSQL tests.")
    return Path(found[-1]).parent


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _as_server_user(command: list[str]) -> list[str]:
    if os.geteuid() == 0:
        return ["runuser", "-u", "nobody", "--", *command]
    return command


def _run(command: list[str], folder: Path) -> None:
    result = subprocess.run(_as_server_user(command), cwd=folder, capture_output=True, text=True,
                            env={**os.environ, "LC_ALL": "C"}, timeout=SERVER_START_SECONDS)
    if result.returncode != 0:
        pytest.fail(f"{Path(command[0]).name} failed ({result.returncode}): {result.stderr.strip()[-2000:]}")


@contextmanager
def running_postgres() -> Iterator[str]:
    """A PostgreSQL server in a new temporary folder while the block runs: the URL of its ``postgres`` database."""
    binaries = _postgres_bin()
    folder = Path(tempfile.mkdtemp(prefix="history-postgres-"))
    if os.geteuid() == 0:
        shutil.chown(folder, "nobody", "nogroup")
    data, log = folder / "data", folder / "server.log"
    port = _free_port()
    try:
        _run([str(binaries / "initdb"), "-D", str(data), "-U", POSTGRES_USER, "--auth=trust", "--no-sync",
              "--no-instructions", "-E", "UTF8", "--no-locale"], folder)
        _run([str(binaries / "pg_ctl"), "-D", str(data), "-l", str(log), "-w", "-t", str(SERVER_START_SECONDS),
              "-o", f"-p {port} -h 127.0.0.1 -k {folder} -c fsync=off -c full_page_writes=off "
                    f"-c synchronous_commit=off -c max_connections=100", "start"], folder)
        yield f"postgresql+psycopg://{POSTGRES_USER}@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(_as_server_user([str(binaries / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w",
                                        "stop"]), cwd=folder, capture_output=True, timeout=SERVER_START_SECONDS)
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_url():
    """The ``postgresql+psycopg://`` URL of the ``postgres`` database of a server started for the session."""
    with running_postgres() as url:
        yield url


@pytest.fixture
def postgres_database(postgres_url):
    """The URL of a new, empty database on the session's server (dropped after the test)."""
    import sqlalchemy as sa

    name = "history_" + uuid.uuid4().hex[:12]
    admin = sa.create_engine(postgres_url, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as connection:
            connection.execute(sa.text(f'CREATE DATABASE "{name}"'))
        yield postgres_url.rsplit("/", 1)[0] + "/" + name
        with admin.connect() as connection:
            connection.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    finally:
        admin.dispose()


# ---------------------------------------------------------------- snapshots made by hand


def make_decisions(n: int = 3) -> tuple:
    """``n`` decisions about suggested questions, cycling accepted as written, edited and accepted, rejected,
    edited and left open (each with a passage, which a snapshot does not keep)."""
    from coverage_core.decisions import SuggestionDecision

    kinds = [("accepted", "What does step {i} do?", "What does step {i} do?", "local"),
             ("accepted", "Which tool is used in step {i}?", "What is used in step {i}?", "llm"),
             ("rejected", "Why step {i}?", "Why step {i}?", "local"),
             ("open", "When does step {i} start?", "When is step {i}?", "draft")]
    decisions = []
    for i in range(n):
        decision, question, original, origin = kinds[i % len(kinds)]
        decisions.append(SuggestionDecision(
            question=question.format(i=i), origin=origin, decision=decision, original=original.format(i=i),
            cluster=None if i % 5 == 4 else i % 3, document=f"doc-{i % 6:04d}.txt", passage=f"Step {i} is …"))
    return tuple(decisions)


def make_snapshot(n_documents: int = 6, *, label: str | None = "main", seed: int = 0, changed: tuple[int, ...] = (),
                  untested: tuple[int, ...] | None = None, recorded_at=None, keep_text: bool = False,
                  n_questions: int = 4, decisions=None):
    """A RunSnapshot of ``n_documents`` documents ``doc-0000.txt``…; ``changed`` documents get other content,
    ``untested`` lists the untested ones (default: every third). Shares vary with ``seed``; one share is None.
    ``decisions`` (:func:`make_decisions`) as given: None, not known."""
    import hashlib
    from datetime import datetime, timezone

    import numpy as np

    from coverage_core.history.snapshot import DocumentState, QuestionState, RunSnapshot, TopicState

    rng = np.random.default_rng(seed)
    untested = set(range(0, n_documents, 3) if untested is None else untested)
    documents = []
    for index in range(n_documents):
        text = f"Document {index} version {int(index in changed)}."
        share = None if index == 1 else (0.0 if index in untested else float(rng.integers(1, 8)) / 7)
        documents.append(DocumentState(
            name=f"doc-{index:04d}.txt", content_hash=hashlib.sha256(text.encode()).hexdigest(), n_chunks=1 + index % 5,
            tested_share=share, is_untested=index in untested, is_undertested=index % 4 == 1,
            text=text if keep_text else None))
    questions = tuple(QuestionState(text_hash=hashlib.sha256(f"q{i}".encode()).hexdigest(), text=f"What is {i}?",
                                    is_offtopic=i % 3 == 2, offtopic_reason="absent_subject" if i % 3 == 2 else "")
                      for i in range(n_questions))
    topics = (
        TopicState(label="rivers", n_chunks=7, n_questions=2, tested_share=0.5, is_gap=False,
                   documents=tuple((d.content_hash, d.n_chunks) for d in documents[:3])),
        TopicState(label="comets", n_chunks=3, n_questions=0, tested_share=None, is_gap=True,
                   documents=(("f" * 64, 2),)),  # a hash of no listed document survives too
    )
    headline = {"tested_share": float(rng.random()), "n_documents": n_documents, "n_chunks": 3 * n_documents,
                "n_untested_documents": len(untested), "basic": None, "multi_n": 3}
    return RunSnapshot(
        recorded_at=recorded_at or datetime.now(timezone.utc), label=label, tool_version="0.1.0", provider="local",
        model="all-MiniLM-L6-v2", support_threshold=0.41 + seed / 1000, threshold_reliable=seed % 2 == 0,
        headline=headline, documents=tuple(documents), questions=questions, topics=topics,
        traffic={"n_queries": 12, "unmet_share": 0.25} if seed % 2 == 0 else None, decisions=decisions)


def empty_history_at(path, revision: str) -> None:
    """An empty history file at ``path`` whose schema stops at the migration ``revision`` ("0001", ...):
    what an earlier version of coverage_core created, for the upgrade tests to fill and open."""
    import sqlalchemy as sa
    from alembic import command
    from alembic.config import Config

    import coverage_core.history.store as store_module

    config = Config()
    config.set_main_option("script_location", os.path.join(os.path.dirname(store_module.__file__), "migrations"))
    config.set_main_option("path_separator", "os")
    engine = sa.create_engine(f"sqlite:///{path}")
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, revision)
    engine.dispose()


def record_runs(target: str, label: str, count: int) -> list[int]:
    """Record ``count`` runs labelled ``label`` into ``target`` with one store: the concurrency tests' worker."""
    from coverage_core.history.store import HistoryStore

    with HistoryStore(target) as store:
        return [store.record(make_snapshot(label=label, seed=index)).run for index in range(count)]


# ---------------------------------------------------------------- two real runs (the walk)
FIRST_DOCUMENTS = ("Drum.txt", "Flute.txt")
ADDED_DOCUMENTS = ("Koala.txt", "Lobster.txt")  # no question of the Drum and Flute set is about them


def two_analysed_runs(cache_dir) -> tuple[list, str]:
    """Snapshots of two runs with the bundled model: Drum and Flute, then the same with Koala and Lobster added
    and the first question removed; and that question."""
    from coverage_core.config import AnalysisConfig
    from coverage_core.embeddings import EmbeddingCache, make_embedder
    from coverage_core.history import snapshot_of_analysis
    from coverage_core.inputs.ingest import read_documents
    from coverage_core.inputs.questions import read_questions
    from coverage_core.outputs.report import build_report
    from coverage_core.session import analyze
    from tests.app_support import EXAMPLE, subset_csv

    embedder, cache = make_embedder("local"), EmbeddingCache(cache_dir)
    questions = read_questions(subset_csv(("Drum", "Flute")), name="questions.csv")
    fewer = read_questions(questions.frame.iloc[1:].to_csv(index=False).encode(), name="questions.csv")
    snapshots = []
    for names, asked in ((FIRST_DOCUMENTS, questions), (FIRST_DOCUMENTS + ADDED_DOCUMENTS, fewer)):
        documents = read_documents([EXAMPLE / "docs" / name for name in names]).documents
        analysis = analyze(AnalysisConfig(support_threshold=0.5, n_clusters=3), documents, asked,
                           embedder=embedder, cache=cache)
        snapshots.append(snapshot_of_analysis(analysis, build_report(analysis), label="main"))
    return snapshots, questions.texts[0]
